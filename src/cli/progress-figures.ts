import type { SyncProgress } from '../index.ts';

export interface ProgressFigures {
  /** Share of the run's range applied, 0..1: (seq - start) / (source - start); 1 when there was nothing to apply. */
  readonly share: number;
  /** Events applied per second since the run started on this projection. */
  readonly rate: number;
  /** Events the projection is behind the source: sourceSeq - seq, never below 0. */
  readonly lag: number;
}

/** What the progress bar shows for one SyncProgress, `elapsedMs` after the run began. */
export function progressFigures(p: Pick<SyncProgress, 'seq' | 'sourceSeq' | 'events' | 'startSeq'>, elapsedMs: number): ProgressFigures {
  const start = Math.min(p.startSeq ?? 0, p.seq);
  const span = p.sourceSeq - start;
  const share = span <= 0 ? 1 : Math.min(1, Math.max(0, (p.seq - start) / span));
  const rate = elapsedMs <= 0 ? 0 : Math.round((p.events * 1000) / elapsedMs);
  return { share, rate, lag: Math.max(0, p.sourceSeq - p.seq) };
}
