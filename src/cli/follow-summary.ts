import type { SyncProgress, SyncReport } from '../index.ts';

/**
 * What `sync --follow` says in human mode: events applied (live, from the
 * progress of the pass in flight too) and the lag, the largest number of
 * events a projection is behind the source.
 */
export class FollowTally {
  readonly #started = Date.now();
  #applied = 0;
  #atLastLine = 0;
  readonly #inPass = new Map<string, number>();
  readonly #lag = new Map<string, number>();
  #last: SyncReport | undefined;

  progress(p: SyncProgress): void {
    if (p.phase === 'suspended') return;
    this.#inPass.set(p.projection, p.events);
    this.#lag.set(p.projection, Math.max(0, p.sourceSeq - p.seq));
  }

  passDone(r: SyncReport): void {
    this.#last = r;
    this.#inPass.clear();
    for (const p of r.projections) {
      this.#applied += p.applied;
      if (p.state === 'active') this.#lag.set(p.name, Math.max(0, r.sourceSeq - p.seq));
      else this.#lag.delete(p.name);
    }
  }

  #total(): number {
    let n = this.#applied;
    for (const v of this.#inPass.values()) n += v;
    return n;
  }

  #lagNow(): number {
    return Math.max(0, ...this.#lag.values());
  }

  /** The line printed every summary interval. */
  summary(intervalMs: number): string {
    const total = this.#total();
    const recent = total - this.#atLastLine;
    this.#atLastLine = total;
    return `following: ${recent} events applied in the last ${seconds(intervalMs)}, ${total} since start; lag ${this.#lagNow()} events`;
  }

  /** The line printed when a signal stops the follow. */
  final(signal: string): string {
    const at = (this.#last?.projections ?? []).filter((p) => p.state === 'active').map((p) => `${p.name} at seq ${p.seq}`);
    const where = at.length > 0 ? `; committed ${at.join(', ')}, where the next sync resumes` : '';
    return `stopped by ${signal} after ${seconds(Date.now() - this.#started)}: ${this.#total()} events applied; lag ${this.#lagNow()} events${where}`;
  }
}

/** A duration as the follow summaries say it: `4.2s`, `60s`. */
export function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms / 1000)}s`;
}
