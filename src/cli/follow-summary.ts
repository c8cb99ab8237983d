import type { SyncProgress, SyncReport } from '../index.ts';

/**
 * What `sync --follow` says in human mode: the source events applied (live,
 * from the progress of the pass in flight too), each counted once however
 * many projections read it and whatever row changes it makes in each, then
 * each projection's share; and the lag, the largest number of events a
 * projection is behind the source.
 */
export class FollowTally {
  readonly #started = Date.now();
  #atLastLine = 0;
  /** Per projection, in the order first seen: its source table and the source events of the passes done. */
  readonly #done = new Map<string, { table: string; events: number }>();
  /** Per projection, the source events of the pass in flight (SyncProgress.sourceEvents is of the run so far). */
  readonly #inPass = new Map<string, number>();
  readonly #lag = new Map<string, number>();
  #last: SyncReport | undefined;

  progress(p: SyncProgress): void {
    const seen = this.#done.get(p.projection);
    if (seen === undefined) this.#done.set(p.projection, { table: p.sourceTable ?? p.projection, events: 0 });
    else if (p.sourceTable !== undefined) seen.table = p.sourceTable;
    if (p.sourceEvents !== undefined) this.#inPass.set(p.projection, p.sourceEvents);
    if (p.phase === 'suspended') return;
    this.#lag.set(p.projection, Math.max(0, p.sourceSeq - p.seq));
  }

  passDone(r: SyncReport): void {
    this.#last = r;
    for (const [name, n] of this.#inPass) {
      const d = this.#done.get(name);
      if (d !== undefined) d.events += n;
    }
    this.#inPass.clear();
    for (const p of r.projections) {
      if (p.state === 'active') this.#lag.set(p.name, Math.max(0, r.sourceSeq - p.seq));
      else this.#lag.delete(p.name);
    }
  }

  /** Each projection's source events since start. */
  #each(): [string, { table: string; events: number }][] {
    return [...this.#done].map(([name, d]) => [name, { table: d.table, events: d.events + (this.#inPass.get(name) ?? 0) }]);
  }

  /** Source events since start, each once: projections of one table read the same events, so a table counts as the one that read most. */
  #total(): number {
    const byTable = new Map<string, number>();
    for (const [, d] of this.#each()) byTable.set(d.table, Math.max(byTable.get(d.table) ?? 0, d.events));
    let n = 0;
    for (const v of byTable.values()) n += v;
    return n;
  }

  #perProjection(): string {
    const each = this.#each();
    return each.length === 0 ? '' : ` (${each.map(([name, d]) => `${name} ${d.events}`).join(', ')})`;
  }

  #lagNow(): number {
    return Math.max(0, ...this.#lag.values());
  }

  /** The line printed every summary interval. */
  summary(intervalMs: number): string {
    const total = this.#total();
    const recent = total - this.#atLastLine;
    this.#atLastLine = total;
    return `following: ${recent} source events in the last ${seconds(intervalMs)}, ${total} since start${this.#perProjection()}; lag ${this.#lagNow()} events`;
  }

  /**
   * The line printed when a signal stops the follow; `standing`: where it
   * leaves each projection, as the target stores it (Syncer.standing), else
   * what the last pass said. Its lag counts every projection, a suspended
   * or failed one too (the events it did not apply), and names those.
   */
  final(signal: string, standing?: SyncReport, breaks: ReadonlyMap<string, string> = new Map()): string {
    const left = standing ?? this.#last;
    const all = left?.projections ?? [];
    // A cursor that does not continue (the next sync rebuilds it): its rows may lack changes, how many is not known.
    const ok = all.filter((p) => p.state === 'active' && p.error === undefined && !breaks.has(p.name));
    const at = ok.map((p) => `${p.name} at seq ${p.seq}`);
    const where = at.length > 0 ? `; committed ${at.join(', ')}, where the next sync resumes` : '';
    const held = all
      .filter((p) => !ok.includes(p))
      .map((p) =>
        p.error !== undefined
          ? `${p.name} failed ${p.error.code} at seq ${p.seq}`
          : p.state === 'suspended'
            ? `${p.name} suspended ${p.reason ?? ''} at seq ${p.seq}`
            : breaks.has(p.name)
              ? `${p.name} rebuilt from the source by the next sync (its cursor at seq ${p.seq} cannot continue: ${breaks.get(p.name) ?? ''})`
              : `${p.name} not built yet`,
      );
    const stuck = held.length > 0 ? `; ${held.join(', ')} (sluice health says the repair)` : '';
    const lag =
      breaks.size > 0
        ? 'lag not known'
        : `lag ${standing === undefined ? this.#lagNow() : Math.max(0, ...all.map((p) => standing.sourceSeq - p.seq))} events`;
    return `stopped by ${signal} after ${seconds(Date.now() - this.#started)}: ${this.#total()} source events applied${this.#perProjection()}; ${lag}${where}${stuck}`;
  }
}

/** A duration as the follow summaries say it: `4.2s`, `60s`. */
export function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms / 1000)}s`;
}
