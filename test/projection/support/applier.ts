import type { Db } from '../../../src/sqlite/index.ts';
import { applyRows, type RowsApplied, type Suspension } from '../../../src/apply/projections/index.ts';
import { decodedBatch, journalBatch, type ChangeBatch, readEventsInRange, readSourceView } from '../../../src/feed/index.ts';
import { dropTemps } from '../../../src/projection/index.ts';
import type { CompiledProjection } from '../../../src/projection/index.ts';
import { underTamperAsync } from './batch.ts';

/*
 * A batch through the one applier (apply/projections/applier.ts applyRows), fed as
 * sync feeds it (journalBatch: the journal read in SQL) or as import does
 * (decodedBatch: the same events decoded, as an export file carries them),
 * in a transaction that is rolled back after `tamper` (see underTamper).
 */

/** What feeds the applier: sync's journal batch, or import's decoded one. */
export type Feed = 'journal' | 'decoded';
export const FEEDS: readonly Feed[] = ['journal', 'decoded'];

/** The batch (lo, hi] of p's source table, as `feed` hands it to the applier. Read after the tamper, so a tampered journal is what both feed. */
export function feedBatch(db: Db, p: CompiledProjection, lo: number, hi: number, feed: Feed): ChangeBatch {
  const t = readSourceView(db).tables.get(p.source.table)?.table;
  if (t === undefined) throw new Error(`table ${p.source.table} is not captured`);
  if (feed === 'journal') return journalBatch(db, t, lo, hi);
  // As import.ts does: the events of one table in seq order, in the projection's source columns.
  const events = readEventsInRange(db, [t], lo, hi);
  return decodedBatch(
    db,
    p.source.table,
    p.source.columns.map((c) => c.name),
    events,
    lo,
    hi,
  );
}

export interface ApplierAttempt<T> {
  /** applyRows' outcome, or the code of a corrupt-index error SQLite raised through it. */
  readonly outcome: RowsApplied | Suspension | { readonly kind: 'error'; readonly code: string };
  /** What `look` saw of the target after the batch (undefined after an error). */
  readonly seen?: T;
}

/** Applies the batch through applyRows as a sync or an import would (schema `tgt`), then `look`s at the target, then rolls back. */
export async function throughApplier<T>(
  db: Db,
  p: CompiledProjection,
  lo: number,
  hi: number,
  tamper: string,
  feed: Feed,
  look: (outcome: RowsApplied | Suspension) => T,
): Promise<ApplierAttempt<T>> {
  try {
    return await underTamperAsync(db, lo, tamper, async () => {
      const target = { db, schema: 'tgt', sourceId: 'test', sourcePath: null };
      const outcome = await applyRows(target, p, feedBatch(db, p, lo, hi, feed), 'committed');
      return { outcome, seen: look(outcome) };
    });
  } catch (err) {
    // As step.ts after a failed batch: its transaction may have made work tables.
    dropTemps(db);
    const code = (err as { code?: unknown }).code;
    if (typeof code !== 'string' || !code.startsWith('SQLITE_CORRUPT')) throw err;
    return { outcome: { kind: 'error', code } };
  }
}
