import fs from 'node:fs';
import path from 'node:path';

/*
 * The figures a bench judges against a DESIGN.md target, in one shape, for
 * the one benchmark report (bench/report.ts). A bench calls emitFigures once
 * at its end with what it measured in that run; the runner names the file
 * in SLUICE_BENCH_FIGURES (a bench run by hand, without it, writes nothing
 * more than before).
 */

export interface Figure {
  /** Stable id, e.g. "capture.images.insert-vs-floor". */
  readonly id: string;
  /** The DESIGN.md row it belongs to, e.g. "images-mode capture, bulk transaction". */
  readonly target: string;
  /** What was measured, in words. */
  readonly what: string;
  readonly value: number;
  /** "x" for a ratio, "ms", "us", "MB", "%". */
  readonly unit: string;
  /**
   * The measured value must be at most ('<=') or at least ('>=') `limit`;
   * '<' for strictly below. 'none': DESIGN.md states no target for it (shown
   * for information, never judged; `limit` is ignored).
   */
  readonly op: '<=' | '>=' | '<' | 'none';
  readonly limit: number;
  /**
   * For a ratio against a floor measured in the same run: the floor's own
   * absolute speed, so the report can show it and flag a floor that got
   * slower than in the previous report (a ratio must not improve because
   * its floor did worse). `id` is stable across runs; `perSecond` is the
   * floor's throughput in `unit` (e.g. "rows/s", "events/s").
   */
  readonly floor?: FloorSpeed;
  /**
   * The same figure measured in CPU time (user + system of the processes
   * involved), where wall time is noisy on a shared machine. Shown beside
   * `value`; the judgement stays on `value` unless the bench says otherwise.
   */
  readonly cpu?: number;
}

export interface FloorSpeed {
  /** Stable across runs, e.g. "capture.bare-trigger.insert". */
  readonly id: string;
  /** What the floor is, in words. */
  readonly what: string;
  readonly perSecond: number;
  /** e.g. "rows/s", "events/s". */
  readonly unit: string;
}

export interface FiguresFile {
  readonly bench: string;
  /** ISO time the bench wrote them. */
  readonly measuredAt: string;
  /** The bench's arguments (its size). */
  readonly argv: readonly string[];
  readonly figures: readonly Figure[];
}

export const FIGURES_ENV = 'SLUICE_BENCH_FIGURES';

/** Whether a figure meets its target (null: it has none). */
export function passes(f: Pick<Figure, 'value' | 'op' | 'limit'>): boolean | null {
  if (f.op === 'none') return null;
  if (!Number.isFinite(f.value)) return false;
  return f.op === '<=' ? f.value <= f.limit : f.op === '<' ? f.value < f.limit : f.value >= f.limit;
}

/**
 * How much of its allowance a figure uses: 1 is exactly at the target, below
 * 1 passes. For an upper bound value / limit; for a lower bound limit / value.
 */
export function usage(f: Pick<Figure, 'value' | 'op' | 'limit'>): number {
  if (f.op === 'none') return Number.NaN;
  if (f.op === '>=') return f.value > 0 ? f.limit / f.value : Number.POSITIVE_INFINITY;
  return f.limit > 0 ? f.value / f.limit : Number.POSITIVE_INFINITY;
}

/** Writes the bench's figures where the runner asked (SLUICE_BENCH_FIGURES); a no-op without it. */
export function emitFigures(bench: string, figures: readonly Figure[]): void {
  const file = process.env[FIGURES_ENV];
  if (file === undefined || file === '') return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const out: FiguresFile = { bench, measuredAt: new Date().toISOString(), argv: process.argv.slice(2), figures };
  fs.writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
}
