import type { Db } from '../../sqlite/index.ts';
import { foldIdent, quoteIdent, cachedStatement, writeTransactionSync } from '../../sqlite/index.ts';
import { isSqliteBusy } from '../../errors.ts';
import { readSourceView } from '../../feed/index.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { kindNamed } from '../../projection/index.ts';
import { ownedBy, suspension, type Suspension } from '../projections/index.ts';
import {
  buildTables,
  readBuild,
  readProjection,
  readProjections,
  setState,
  TARGET_INFO_TABLE,
  type ProjectionRecord,
} from '../target/index.ts';
import { ownCheckOf, compareAtCursor } from '../check/index.ts';
import type { EditEvidence, TargetWatch, WatchedProjection } from './target-watch.ts';

/*
 * What a long-lived syncer does with a projection another program wrote
 * (target-watch.ts says which): it compares it with the source at its
 * cursor, as verify does, and suspends it (TARGET_EDITED) when it differs,
 * or when nothing can compare it (a custom handler's declared tables; a
 * contentless fts5 index). An edit that leaves the rows as the source has
 * them (a value changed and changed back) suspends nothing.
 */

/**
 * The watch's view of this run's projections, as stored in the target read
 * on `snap` (a rebuild to another table name still has its live tables):
 * the b-tree tables each one's rows live in (an fts5 index's shadow tables
 * and key table; a custom handler's declared tables). One never built has none.
 */
export function watchedProjections(names: readonly string[]): (snap: Db) => WatchedProjection[] {
  const wanted = new Set(names);
  return (snap) =>
    readProjections(snap, 'main')
      .filter((r) => wanted.has(r.name))
      .flatMap((r) => {
        const live = { name: r.name, tables: [...new Set([...ownedBy(r), ...(kindNamed(r.kind)?.uniqueTables(r.targetTable) ?? [])])] };
        // A protected rebuild's shadow and staged copy, watched under a name of their own (buildWatchName).
        const b = readBuild(r);
        return b === undefined ? [live] : [live, { name: buildWatchName(r.name), tables: buildTables(b) }];
      });
}

/**
 * The name the watch gives a projection's protected rebuild (its shadow
 * tables and staged copy): no projection's own (a NUL is in no name a
 * definition takes), so that evidence of it never suspends the live one.
 */
export function buildWatchName(projection: string): string {
  return `${projection}\0build`;
}

/**
 * The suspension for a projection stored as `rec` that the evidence calls
 * for, after comparing it with the source in the caller's transaction;
 * undefined when its rows are the source's (or the comparison is the next
 * step's to make: a cursor that must rebuild, a source table gone).
 */
function editedSuspension(db: Db, schema: string, rec: ProjectionRecord, ev: EditEvidence): Suspension | undefined {
  const kind = kindNamed(rec.kind);
  if (kind === undefined) return undefined;
  const written = ev.tables.length === 0 ? 'its tables' : ev.tables.join(', ');
  const base = { table: rec.targetTable, source: rec.sourceTable, tables: ev.tables };
  if (kind.verification === undefined) {
    if (ev.tables.length === 0) return undefined;
    return suspension('TARGET_EDITED', {
      ...base,
      message: `Another program wrote ${written} of custom projection ${rec.name} (seen in the target's write-ahead log); sluice cannot compare a custom handler's tables with the source, so their state is unknown.`,
    });
  }
  const view = readSourceView(db);
  const tid = view.tables.get(rec.sourceTable)?.table.tid;
  if (tid === undefined) return undefined;
  const v = compareAtCursor(db, rec, view.hw, tid, view.state.prunedThrough);
  if (v.diffs.length > 0)
    return suspension('TARGET_EDITED', {
      ...base,
      diffs: v.diffs,
      message: `Another program wrote ${written} of projection ${rec.name}, and its rows differ from the source at its cursor (seq ${rec.seq}): ${v.diffs.map((d) => `${d.kind} ${JSON.stringify(d.key)}`).join(', ')}.`,
    });
  if (!v.ok) return undefined;
  const own = ownCheckOf(db, schema, rec);
  const rowTable = kind.rowTable(rec.targetTable);
  const beyondRows = ev.tables.some((t) => rowTable === undefined || foldIdent(t) !== foldIdent(rowTable));
  if (own === false || (own === undefined && beyondRows))
    return suspension('TARGET_EDITED', {
      ...base,
      message:
        own === false
          ? `Another program wrote ${written} of projection ${rec.name}: its index no longer holds exactly the entries of its rows (FTS5 integrity-check).`
          : `Another program wrote ${written} of projection ${rec.name}, which sluice cannot compare with the source (a contentless FTS5 index keeps no values).`,
    });
  return undefined;
}

/**
 * In the caller's target transaction (write lock held): the suspension for
 * `p` if the watch has evidence of an edit of it; the evidence is settled
 * either way.
 */
export function checkEdited(watch: TargetWatch, db: Db, schema: string, name: string): Suspension | undefined {
  const ev = watch.evidence(name);
  if (ev === undefined) return undefined;
  watch.settle(name);
  const rec = readProjection(db, schema, name);
  // (One being rebuilt beside its live tables gets the source's rows at its swap, whatever was edited.)
  if (rec?.state !== 'active' || rec.cursor === null || rec.build !== null) return undefined;
  return editedSuspension(db, schema, rec, ev);
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
  try {
    return writeTransactionSync(db, () => {
      cachedStatement(db, `UPDATE ${quoteIdent(schema)}.${TARGET_INFO_TABLE} SET id = id`).run();
      watch.locked();
      for (const p of projections) {
        const s = checkEdited(watch, db, schema, p.name);
        if (s === undefined) continue;
        setState(db, schema, p.name, 'suspended', s.reason, s.detail);
        found.set(p.name, s);
      }
      return found;
    });
  } catch (err) {
    if (!options.wait && isSqliteBusy(err)) return undefined;
    throw err;
  } finally {
    if (busyTimeout !== undefined) cachedStatement(db, `PRAGMA busy_timeout = ${busyTimeout}`).run();
  }
}
