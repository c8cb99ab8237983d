import type { Db } from '../../sqlite/index.ts';

/** What one step of comparing a projection counts: events of the journal read, rows compared, or changed keys compared at the cursor. */
type StepUnit = 'events' | 'rows' | 'keys';

/**
 * Progress from inside a long statement. SQLite runs a statement in one
 * call, so a bar updated between statements stands still for as long as the
 * longest one (the comparison of a 1M-row table, or the read of 900k events
 * after a cursor). Instead the statement samples its own rows: `sample()` is
 * SQL true for every row that, for about one row in 1024 (random(), so
 * whatever the keys or seqs), calls a function that reports how far it is.
 * Without a listener there is no sample and no cost.
 */
export interface StepProgress {
  /**
   * SQL true for every row, that reports one row in about 1024: at `position`
   * (SQL over the row, measured from start's `origin`), or as a count of the
   * rows seen when omitted.
   */
  sample(position?: string): string;
  /** A step begins: `total` units, reported at 0 now. */
  start(unit: StepUnit, total: number, origin?: number): void;
  /** The step reached its total (reported). */
  end(): void;
}

export interface StepReport {
  readonly unit: StepUnit;
  readonly done: number;
  readonly total: number;
}

const TICK = 'sluice_verify_tick';
/** About one row in 2^SAMPLE_BITS calls the function. */
const SAMPLE_MASK = 1023;
/** A report at most this often (ms) from inside a statement; the first of each step is reported at once. */
const EVERY_MS = 250;

/** A StepProgress on `db` that calls `report` as steps go; undefined (no sampling at all) without `report`. */
export function stepProgress(db: Db, report: ((step: StepReport) => void) | undefined): StepProgress | undefined {
  if (report === undefined) return undefined;
  let unit: StepUnit = 'rows';
  let total = 0;
  let origin = 0;
  let seen = 0;
  let last = 0;
  let reported = false;
  db.function(TICK, { deterministic: false, safeIntegers: false }, (position: unknown) => {
    seen += SAMPLE_MASK + 1;
    const done = Math.min(total, Math.max(0, typeof position === 'number' ? position - origin : seen));
    const now = Date.now();
    if (!reported || now - last >= EVERY_MS) {
      reported = true;
      last = now;
      report({ unit, done, total });
    }
    return 1;
  });
  return {
    sample: (position) => `((random() & ${SAMPLE_MASK}) <> 0 OR ${TICK}(${position ?? 'NULL'}))`,
    start(u, t, o = 0) {
      unit = u;
      total = Math.max(0, t);
      origin = o;
      seen = 0;
      reported = false;
      last = Date.now();
      report({ unit, done: 0, total });
    },
    end() {
      report({ unit, done: total, total });
    },
  };
}
