import type { SyncProgress } from '../index.ts';

export interface ProgressFigures {
  /**
   * Share done, 0..1: of a snapshot's rows when their total is known
   * (rows / rowsTotal); else of the run's range, (seq - start) / (source -
   * start); 1 when there was nothing to do.
   */
  readonly share: number;
  /** Source events applied per second since the run started on this projection. */
  readonly rate: number;
  /** Snapshot rows read per second since the run started on this projection (0 without a snapshot). */
  readonly rowRate: number;
  /** Events the projection is behind the source: sourceSeq - seq, never below 0. */
  readonly lag: number;
}

type Figured = Pick<SyncProgress, 'seq' | 'sourceSeq' | 'events' | 'startSeq'> &
  Partial<Pick<SyncProgress, 'phase' | 'rows' | 'rowsTotal' | 'sourceEvents'>>;

/** What the progress bar shows for one SyncProgress, `elapsedMs` after the run began. */
export function progressFigures(p: Figured, elapsedMs: number): ProgressFigures {
  const perSecond = (n: number) => (elapsedMs <= 0 ? 0 : Math.round((n * 1000) / elapsedMs));
  const lag = Math.max(0, p.sourceSeq - p.seq);
  const rowRate = perSecond(p.rows ?? 0);
  const rate = perSecond(p.sourceEvents ?? p.events);
  if (p.phase === 'snapshot' && p.rowsTotal !== undefined && p.rows !== undefined) {
    const share = p.rowsTotal <= 0 ? 1 : Math.min(1, Math.max(0, p.rows / p.rowsTotal));
    return { share, rate, rowRate, lag };
  }
  const start = Math.min(p.startSeq ?? 0, p.seq);
  const span = p.sourceSeq - start;
  const share = span <= 0 ? 1 : Math.min(1, Math.max(0, (p.seq - start) / span));
  return { share, rate, rowRate, lag };
}

/**
 * The bar's words for one SyncProgress: a snapshot's rows of its total and
 * rows/s while it reads, and after it as long as no event was applied (so
 * the last line of a first sync says what it did, not "0 ev/s"); the seq
 * range, the source events applied, events/s and the lag otherwise.
 */
export function progressDetail(p: Figured, f: ProgressFigures): string {
  const snapshot =
    p.rows === undefined ? undefined : `snapshot ${p.rows}${p.rowsTotal === undefined ? '' : `/${p.rowsTotal}`} rows | ${f.rowRate} rows/s`;
  const events = p.sourceEvents ?? p.events;
  if (snapshot !== undefined && (p.phase === 'snapshot' || events === 0)) return `${snapshot} | lag ${f.lag}`;
  return `${p.phase ?? 'catch-up'} seq ${p.seq}/${p.sourceSeq} | ${events} events | ${f.rate} ev/s | lag ${f.lag}`;
}
