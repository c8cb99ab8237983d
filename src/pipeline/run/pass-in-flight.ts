/*
 * A target's pass in flight, as its part sees it from the main thread: a
 * custom handler that awaits what never comes (or loops) keeps a pass
 * going forever, and the part otherwise stayed "running" (/healthz 200)
 * while its projections fell behind. The worker thread writes, the part
 * reads, through shared memory: no message per pass (a follower runs one
 * per commit: pass-reports.ts), and a thread blocked in a loop is still read.
 */

/**
 * How long a pass of a following target may go without committing a batch
 * before it is stalled (/healthz 503, the status page, the part's
 * `stalled`), unless the target's `health: {maxPassMs}` says otherwise. A
 * pass holds the target's write lock meanwhile, so another writer of the
 * target waiting its busy timeout (5 s) already fails; the default leaves
 * a handler that calls a slow service per event room for a batch, so a
 * busy catch-up does not turn /healthz 503 on and off. A first build or a
 * rebuild is no stall: the target is `building` then (503 anyway).
 */
export const STALLED_PASS_MS = 30_000;

export class PassInFlight {
  /** Sent to the worker thread (workerData), which makes its own PassInFlight on it. */
  readonly buffer: SharedArrayBuffer;
  /** [0]: when the pass in flight started or last committed (ms since the epoch); 0 while none is in flight. */
  readonly #at: Float64Array;

  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT)) {
    this.buffer = buffer;
    this.#at = new Float64Array(buffer);
  }

  /** A pass starts (worker). */
  started(): void {
    this.#at[0] = Date.now();
  }

  /** The pass in flight committed a batch or built a projection (worker). */
  progressed(): void {
    if (this.#at[0] !== 0) this.#at[0] = Date.now();
  }

  /** The pass ended (worker). */
  ended(): void {
    this.#at[0] = 0;
  }

  /** Since when the pass in flight has made no progress, when that is longer than `boundMs` ago (part). */
  stalledSince(boundMs: number, now = Date.now()): number | undefined {
    const at = this.#at[0] ?? 0;
    return at !== 0 && now - at > boundMs ? at : undefined;
  }
}
