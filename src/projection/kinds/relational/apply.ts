import type { Db } from '../../../sqlite/index.ts';
import type { EventRelation } from '../../../feed/index.ts';
import { dropWorkTables, emptyWorkTables } from '../../../sqlite/index.ts';
import { SluiceError, errorCode } from '../../../errors.ts';
import { hasForeignUniqueIndex } from '../../foreign-unique.ts';
import type { CompiledMap, CompiledMirror } from '../../compiled.ts';
import { ExpressionRaised, prepareImages, raisingImage } from './images.ts';
import { applyByNetTransitions } from './net.ts';
import { applyByTransitions } from './transitions.ts';
import { applyPlain } from './plain.ts';
import type { RelationalResult } from './transitions.ts';
export type { RelationalMismatch, RelationalResult } from './transitions.ts';

export { sqlEq } from './images.ts';

/*
 * Set-based apply for mirror and map projections. Per-event semantics are
 * kept exactly, but evaluated by SQLite over the whole batch: each event's
 * before- and after-image is projected to a target image (mirror: as is;
 * map: the definition's expressions and filter, see relational/images.ts);
 * every event's before must equal the target row as it is at that point in
 * the batch (the target row itself, or the previous event's after-image for
 * that key), by storage class and bytes; the last after-image of each key is
 * written. Any mismatch aborts the whole batch before a row is kept.
 *
 * Three implementations of those semantics: two fast ones that only say
 * whether the batch applies cleanly, the plain path (relational/plain.ts:
 * a mirror batch that touches each key once, each before-image checked
 * against the target as it is and written with no grouping by key, undone
 * when the batch is not that) and the grouped one
 * (relational/net.ts, one pass, no sort); and the reference
 * (relational/transitions.ts) that finds the first mismatch. The reference
 * runs only when neither fast one applies the batch.
 */

/**
 * Which implementation applies batches: `auto` tries the plain path
 * (relational/plain.ts, a mirror batch that touches each key once), then the
 * grouped one (relational/net.ts), then the reference; `grouped` skips the
 * plain path; `reference` is for tests that compare them.
 */
export type RelationalPath = 'auto' | 'grouped' | 'reference';

/**
 * Applies the events of `events` (a relation with columns seq, op, ts and
 * the source images in journal layout c0..c(2n-1), keyed by seq and read in
 * seq order) to the target, in the caller's transaction. Its work tables
 * stay, empty, for the next batch; after an error the caller drops them with
 * dropTemps.
 */
export function applyRelational(
  db: Db,
  schema: string,
  p: CompiledMirror | CompiledMap,
  events: EventRelation,
  path: RelationalPath = 'auto',
  /** The target table has a UNIQUE index a user added (foreign-unique.ts): write without REPLACE. */
  strict: boolean = hasForeignUniqueIndex(db, schema, p.targetTable),
): RelationalResult {
  try {
    const img = prepareImages(db, p, events);
    const plain = path === 'auto' ? applyPlain(db, schema, p, img, strict) : undefined;
    if (plain !== undefined) return { ...plain, decidedBy: 'fast', via: 'plain' };
    const fast = path === 'reference' ? undefined : applyByNetTransitions(db, schema, p, img, strict);
    if (fast !== undefined) return { ...fast, decidedBy: 'fast', via: 'grouped' };
    return { ...applyByTransitions(db, schema, p, img, strict), decidedBy: 'reference' };
  } catch (err) {
    // An expression that raises on a value: which one, on which image (read before the work tables are emptied).
    const raised = errorCode(err) === 'SQLITE_ERROR' && !(err instanceof SluiceError) ? raisingImage(db, p) : undefined;
    throw raised === undefined ? err : new ExpressionRaised(raised, err);
  } finally {
    emptyWorkTables(db);
  }
}

/** Drops the apply paths' TEMP tables: after a failed batch (its transaction may have made some of them). */
export function dropTemps(db: Db): void {
  dropWorkTables(db);
  db.exec('DROP TABLE IF EXISTS temp._sluice_tr');
}
