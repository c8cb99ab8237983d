/*
 * A pass can leave a projection failed with nothing of its batch committed
 * (its custom handler threw: the service it feeds was down; SQLite failed
 * on it): its error says it is retried at the next pass. A follower passes
 * when the source commits, so after the last commit of a burst the next
 * pass could be hours away, and the target stayed behind the source all
 * that while with nothing left to wake it. The follower tries such a pass
 * again by itself: first after FIRST_MS, then after twice as long each time
 * it fails again, up to MAX_MS; a pass without such a failure ends the
 * retries. A retry is no sign of activity: a source with no commit still
 * goes quiet (follow.ts).
 */

/** The first retry of a failed pass comes this long after it (the poll that looks for it runs every 250 ms at most). */
const FIRST_MS = 250;
/** A projection that keeps failing is tried at least this often. */
const MAX_MS = 10_000;

export class FailedPassRetry {
  #delayMs = 0;
  #dueMs: number | undefined;

  /**
   * Notes a pass: one that left a projection failed by an error that may
   * pass by itself (Syncer.failedMayClear) schedules a retry; any other ends
   * them. A refusal (a Rejected definition change) is not tried again: only
   * the user's repair ends it, and each retry would report it and count one
   * more failure in the target.
   */
  passed(failedMayClear: boolean, nowMs = Date.now()): void {
    if (!failedMayClear) {
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
