import type { Db } from '../../sqlite/connection.ts';
import { checkJournalLayout } from './layout-guard.ts';
import { quoteIdent } from '../../sqlite/quote.ts';
import type { JsonValue } from '../../sqlite/codec.ts';
import type { EventRelation } from '../../capture/schema.ts';
import { dropWorkTables, emptyWorkTables } from '../../sqlite/work-tables.ts';
import { hasForeignUniqueIndex } from '../foreign-unique.ts';
import type { CompiledProjection } from '../compile.ts';
import { prepareImages } from './relational-images.ts';
import { applyByNetTransitions } from './relational-net.ts';
import { applyByTransitions } from './relational-transitions.ts';
import type { Reason } from '../../reasons.ts';

export { sqlEq } from './relational-images.ts';

/*
 * Set-based apply for mirror and map projections. Per-event semantics are
 * kept exactly, but evaluated by SQLite over the whole batch: each event's
 * before- and after-image is projected to a target image (mirror: as is;
 * map: the definition's expressions and filter, see relational-images.ts);
 * every event's before must equal the target row as it is at that point in
 * the batch (the target row itself, or the previous event's after-image for
 * that key), by storage class and bytes; the last after-image of each key is
 * written. Any mismatch aborts the whole batch before a row is kept.
 *
 * Two implementations of those semantics: a fast one (relational-net.ts,
 * one pass, no sort) that only says whether the batch applies cleanly, and
 * the reference (relational-transitions.ts) that finds the first mismatch.
 * The reference runs only when the fast one does not apply the batch.
 */

export interface RelationalMismatch {
  readonly seq: number;
  readonly key: readonly JsonValue[];
  /** `UNCAPTURED_REPLACE`: an insert found its key present; `TARGET_DIVERGED`: the before-image differs. */
  readonly reason: Reason<'TARGET_DIVERGED' | 'UNCAPTURED_REPLACE'>;
  readonly where: 'target' | 'batch';
}

export interface RelationalResult {
  readonly transitions: number;
  readonly mismatch?: RelationalMismatch;
  /** Which implementation decided: `fast` applied a clean batch, `reference` found a mismatch or was asked for. */
  readonly decidedBy?: 'fast' | 'reference';
}

export function createRelationalTarget(db: Db, schema: string, p: CompiledProjection): void {
  const cols = p.columns.map((c) => `${quoteIdent(c.name)}${c.decl === '' ? '' : ` ${c.decl}`}`);
  const withoutRowid = p.identity && p.source.withoutRowid ? ' WITHOUT ROWID' : '';
  db.exec(
    `CREATE TABLE ${quoteIdent(schema)}.${quoteIdent(p.targetTable)} (${cols.join(', ')}, PRIMARY KEY (${p.key.map(quoteIdent).join(', ')}))${withoutRowid}`,
  );
}

/** Fills the target from the source table (main) in the caller's transaction: the snapshot path. */
export function snapshotRelational(db: Db, schema: string, p: CompiledProjection): number {
  const target = `${quoteIdent(schema)}.${quoteIdent(p.targetTable)}`;
  const where = p.filter === null ? '' : ` WHERE ${p.filter}`;
  const sql = `INSERT INTO ${target} (${p.columns.map((c) => quoteIdent(c.name)).join(', ')}) SELECT ${p.columns.map((c) => c.expr).join(', ')} FROM main.${quoteIdent(p.source.table)}${where}`;
  return db.prepare(sql).run().changes;
}

/** Which implementation applies batches; `reference` is for tests that compare the two. */
export type RelationalPath = 'auto' | 'reference';

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
  p: CompiledProjection,
  events: EventRelation,
  path: RelationalPath = 'auto',
  /** The target table has a UNIQUE index a user added (foreign-unique.ts): write without REPLACE. */
  strict: boolean = hasForeignUniqueIndex(db, schema, p.targetTable),
): RelationalResult {
  checkJournalLayout(db, p, events);
  try {
    const img = prepareImages(db, p, events);
    const fast = path === 'auto' ? applyByNetTransitions(db, schema, p, img, strict) : undefined;
    if (fast !== undefined) return { ...fast, decidedBy: 'fast' };
    return { ...applyByTransitions(db, schema, p, img, strict), decidedBy: 'reference' };
  } finally {
    emptyWorkTables(db);
  }
}

/** Drops the apply paths' TEMP tables: after a failed batch (its transaction may have made some of them). */
export function dropTemps(db: Db): void {
  dropWorkTables(db);
  db.exec('DROP TABLE IF EXISTS temp._sluice_tr');
}
