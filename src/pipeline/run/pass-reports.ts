import type { MetricsRecord } from '../index.ts';

/**
 * How long a target's worker holds the reports of passes that only applied
 * before telling the main thread (for /metrics and the part's state). A
 * follower runs a pass per source commit: at 1,000 commits/s one message
 * per pass cost each worker about a tenth of its CPU (bench/run.ts).
 */
export const PASS_REPORT_MS = 100;

/**
 * The pass reports a target's worker sends to its part (target-messages.ts),
 * merged: a pass whose projections are all active and without error, as in
 * the last report sent, is added to the next report (events applied and
 * batches summed, the latest commit time kept), sent within PASS_REPORT_MS;
 * any other pass (the first, a suspension, an error, a projection that
 * came or went) is sent at once, after what was held. The counters of
 * /metrics see the same sums; only their moment moves, by at most that.
 */
export class PassReports {
  readonly #send: (projections: readonly MetricsRecord[]) => void;
  #last: readonly MetricsRecord[] | undefined;
  #held: MetricsRecord[] | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(send: (projections: readonly MetricsRecord[]) => void) {
    this.#send = send;
  }

  add(projections: readonly MetricsRecord[]): void {
    if (!this.#routine(projections)) {
      this.flush();
      this.#last = projections;
      this.#send(projections);
      return;
    }
    this.#held =
      this.#held === undefined
        ? [...projections]
        : this.#held.map((h, i) => {
            const p = projections[i] as MetricsRecord;
            const lastCommitMs = p.lastCommitMs ?? h.lastCommitMs;
            return {
              name: h.name,
              state: h.state,
              applied: h.applied + p.applied,
              batches: (h.batches ?? 0) + (p.batches ?? 0),
              ...(lastCommitMs === undefined ? {} : { lastCommitMs }),
            };
          });
    this.#timer ??= setTimeout(() => this.flush(), PASS_REPORT_MS);
  }

  /** Sends what is held now (before a report that cannot wait, and when the worker stops). */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const held = this.#held;
    this.#held = undefined;
    if (held !== undefined) this.#send(held);
  }

  /** Active and without error, the same projections in the same order as the last report sent, which was so too. */
  #routine(projections: readonly MetricsRecord[]): boolean {
    const last = this.#last;
    return (
      last !== undefined &&
      last.length === projections.length &&
      projections.every((p, i) => {
        const l = last[i];
        return l?.name === p.name && [p, l].every((x) => x.state === 'active' && x.error === undefined && x.reason === undefined);
      })
    );
  }
}
