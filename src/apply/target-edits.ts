import type { Db } from '../sqlite/connection.ts';
import { foldIdent, quoteIdent } from '../sqlite/quote.ts';
import { cachedStatement } from '../sqlite/statement-cache.ts';
import { isSqliteBusy } from '../errors.ts';
import { readSourceView } from '../feed/source-view.ts';
import type { CompiledProjection } from '../projection/compile.ts';
import { kindOf } from '../projection/kinds/registry.ts';
import { suspension, type Suspension } from './applier.ts';
import { readProjection, setState, TARGET_INFO_TABLE, type ProjectionRecord } from './target-meta.ts';
import { compareAtCursor } from './verify.ts';
import type { EditEvidence, TargetWatch, WatchedProjection } from './target-watch.ts';

/*
 * What a long-lived syncer does with a projection another program wrote
 * (target-watch.ts says which): it compares it with the source at its
 * cursor, as verify does, and suspends it (TARGET_EDITED) when it differs,
 * or when nothing can compare it (a custom handler's declared tables; a
 * contentless fts5 index). An edit that leaves the rows as the source has
 * them (a value changed and changed back) suspends nothing.
 */

/** The b-tree tables a projection's rows live in, for the watch (an fts5 index's shadow tables; a custom handler's declared ones). */
export function watchedOf(p: CompiledProjection): WatchedProjection {
  const kind = kindOf(p);
  return { name: p.name, tables: [...new Set([...p.ownedTables, ...kind.uniqueTables(p.targetTable)])] };
}

/**
 * The suspension for projection `p` (stored as `rec`) that the evidence
 * calls for, after comparing it with the source in the caller's transaction;
 * undefined when its rows are the source's (or the comparison is the next
 * step's to make: a cursor that must rebuild, a source table gone).
 */
export function editedSuspension(
  db: Db,
  schema: string,
  p: CompiledProjection,
  rec: ProjectionRecord,
  ev: EditEvidence,
): Suspension | undefined {
  const kind = kindOf(p);
  const written = ev.tables.length === 0 ? 'its tables' : ev.tables.join(', ');
  const base = { table: p.targetTable, source: p.source.table, tables: ev.tables };
  if (kind.verification === undefined) {
    if (ev.tables.length === 0) return undefined;
    return suspension('TARGET_EDITED', {
      ...base,
      message: `Another program wrote ${written} of custom projection ${p.name} (seen in the target's write-ahead log); sluice cannot compare a custom handler's tables with the source, so their state is unknown.`,
    });
  }
  const view = readSourceView(db);
  const tid = view.tables.get(p.source.table)?.table.tid;
  if (tid === undefined) return undefined;
  const v = compareAtCursor(db, rec, view.hw, tid, view.state.prunedThrough);
  if (v.diffs.length > 0)
    return suspension('TARGET_EDITED', {
      ...base,
      diffs: v.diffs,
      message: `Another program wrote ${written} of projection ${p.name}, and its rows differ from the source at its cursor (seq ${rec.seq}): ${v.diffs.map((d) => `${d.kind} ${JSON.stringify(d.key)}`).join(', ')}.`,
    });
  if (!v.ok) return undefined;
  const own = kind.verification.ownCheck?.(db, schema, p as never);
  const rowTable = kind.rowTable(p.targetTable);
  const beyondRows = ev.tables.some((t) => rowTable === undefined || foldIdent(t) !== foldIdent(rowTable));
  if (own === false || (own === undefined && beyondRows))
    return suspension('TARGET_EDITED', {
      ...base,
      message:
        own === false
          ? `Another program wrote ${written} of projection ${p.name}: its index no longer holds exactly the entries of its rows (FTS5 integrity-check).`
          : `Another program wrote ${written} of projection ${p.name}, which sluice cannot compare with the source (a contentless FTS5 index keeps no values).`,
    });
  return undefined;
}

/**
 * In the caller's target transaction (write lock held): the suspension for
 * `p` if the watch has evidence of an edit of it; the evidence is settled
 * either way.
 */
export function checkEdited(watch: TargetWatch, db: Db, schema: string, p: CompiledProjection): Suspension | undefined {
  const ev = watch.evidence(p.name);
  if (ev === undefined) return undefined;
  watch.settle(p.name);
  const rec = readProjection(db, schema, p.name);
  if (rec?.state !== 'active' || rec.cursor === null) return undefined;
  return editedSuspension(db, schema, p, rec, ev);
}

/**
 * Checks every projection of `projections` the watch has evidence for, in
 * one target write transaction of its own, and stores the suspensions it
 * finds. With `wait: false` (a follower while idle) a busy target is tried
 * again later: undefined, the evidence kept.
 */
export function checkPendingEdits(
  watch: TargetWatch,
  db: Db,
  schema: string,
  projections: readonly CompiledProjection[],
  options: { readonly wait: boolean },
): Map<string, Suspension> | undefined {
  const found = new Map<string, Suspension>();
  if (!projections.some((p) => watch.evidence(p.name) !== undefined)) return found;
  const busyTimeout = options.wait ? undefined : Number(cachedStatement(db, 'PRAGMA busy_timeout', 'pluck').get());
  if (busyTimeout !== undefined) cachedStatement(db, 'PRAGMA busy_timeout = 0').run();
  db.exec('BEGIN');
  try {
    cachedStatement(db, `UPDATE ${quoteIdent(schema)}.${TARGET_INFO_TABLE} SET id = id`).run();
    watch.locked();
    for (const p of projections) {
      const s = checkEdited(watch, db, schema, p);
      if (s === undefined) continue;
      setState(db, schema, p.name, 'suspended', s.reason, s.detail);
      found.set(p.name, s);
    }
    db.exec('COMMIT');
    return found;
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    if (!options.wait && isSqliteBusy(err)) return undefined;
    throw err;
  } finally {
    if (busyTimeout !== undefined) cachedStatement(db, `PRAGMA busy_timeout = ${busyTimeout}`).run();
  }
}
