import type { SyncReport } from '../../apply/sync/index.ts';

/*
 * A pass can leave a projection failed with nothing of its batch committed
 * (another process held the target's write lock past the busy timeout, the
 * disk was full, a handler threw): its error says it is retried at the next
 * pass. A follower passes when the source commits, so after the last commit
 * of a burst the next pass could be hours away, and the target stayed behind
 * the source all that while with nothing left to wake it. The follower tries
 * such a pass again by itself: first after FIRST_MS, then after twice as
 * long each time it fails again, up to MAX_MS; a pass without a failure
 * ends the retries.
 */

/** The first retry of a failed pass comes this long after it (the poll that looks for it runs every 250 ms at most). */
const FIRST_MS = 250;
/** A projection that keeps failing is tried at least this often. */
const MAX_MS = 10_000;

export class FailedPassRetry {
  #delayMs = 0;
  #dueMs: number | undefined;

  /** Notes a pass's report: one with a projection failed schedules a retry; one without ends them. */
  passed(report: SyncReport, nowMs = Date.now()): void {
    if (!report.projections.some((p) => p.error !== undefined)) {
      this.#delayMs = 0;
      this.#dueMs = undefined;
      return;
    }
    this.#delayMs = this.#delayMs === 0 ? FIRST_MS : Math.min(this.#delayMs * 2, MAX_MS);
    this.#dueMs = nowMs + this.#delayMs;
  }

  /** Whether a failed pass is to be tried again now (the source being idle). */
  due(nowMs = Date.now()): boolean {
    return this.#dueMs !== undefined && nowMs >= this.#dueMs;
  }
}
