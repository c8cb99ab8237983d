import {
  shadowBuildOf,
  TARGET_SCHEMA,
  ownedTables,
  SELF_CLEARING_SUSPENSIONS,
  type ProjectionRecord,
  userIndexes,
} from '../target/index.ts';
import {
  kindNamed,
  compileProjection,
  type CompiledProjection,
  type SourceShape,
  type AlterFacts,
  type CursorFact,
  type UncompiledProjection,
  parseStoredDefinition,
} from '../../projection/index.ts';
import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../../sqlite/index.ts';
import { quoteIdent } from '../../sqlite/index.ts';
import { firstEventMsAfter, validateCursor, decodeCursor, altersSince, lineageSince, type ColumnOrigin } from '../../feed/index.ts';
import type { SourceView } from '../../feed/index.ts';
import {
  columnsRead,
  BROKEN_DEFINITION_REASONS,
  cursorBreak,
  lacksImages,
  nextSyncCapture,
  replacedTables,
  takenTable,
  unbuildable,
  type BuildableFacts,
} from '../projections/index.ts';
import { matchesSourceAt } from '../check/index.ts';

/*
 * The facts classifyChange needs that only the databases know, each read
 * without writing anything: whether a stored cursor continues, how many
 * source rows two map filters disagree on, a user's indexes on the
 * projection's tables, and what a rebuild would cost (rows, pages, and the
 * free space of the target's file system).
 */

/**
 * Whether the stored cursor of `rec` continues on the source, judged as the
 * next sync's step judges it (src/apply/sync/step-decision.ts), read in
 * the caller's transaction: a suspension that only a rebuild clears, then
 * validateCursor with the same options (a kind verify can check accepts
 * the alters `sluice alter` recorded, and proves continuity across other
 * DDL by comparing the copy with the source). `next` is what would run:
 * when its fingerprint differs from the stored one (or the stored
 * definition was broken and this one compiles), sync rebuilds from a
 * snapshot whatever the cursor says, so a cursor that does not continue is
 * then rebuildable unless the source table cannot be read for a build.
 */
function cursorFact(db: Db, rec: ProjectionRecord, view: SourceView, next?: CompiledProjection): CursorFact {
  const rebuilds = next !== undefined && (next.fingerprint !== rec.fingerprint || BROKEN_DEFINITION_REASONS.has(rec.reason ?? ''));
  const stop = (reason: string, message: string): CursorFact => {
    const unreadable = next === undefined ? undefined : unbuildable(buildable(db, view, next.source.table, next.kind))?.reason;
    return rebuilds && unreadable === undefined
      ? { continues: false, reason, message, rebuildable: true }
      : { continues: false, reason: unreadable ?? reason, message, rebuildable: false };
  };
  // A stored definition that did not compile is rebuilt from one that does (step.ts, before anything else);
  // a suspension that only a rebuild clears holds whatever the definition (sync's gate comes next).
  const held = rec.reason ?? 'SUSPENDED';
  if (rec.state === 'suspended' && BROKEN_DEFINITION_REASONS.has(held) && next !== undefined)
    return stop(held, `${rec.name} is suspended (${held}) and this definition compiles: sync rebuilds it from it`);
  if (rec.state === 'suspended' && !SELF_CLEARING_SUSPENSIONS.has(held))
    return {
      continues: false,
      reason: held,
      message: `${rec.name} is suspended (${held}) and stays so until it is rebuilt`,
      rebuildable: false,
    };
  const own = buildable(db, view, rec.sourceTable, rec.kind);
  if (lacksImages(own)) return stop('NEEDS_IMAGES_MODE', `${rec.sourceTable} is captured in ${own.table.mode} mode`);
  const provable = kindNamed(next?.kind ?? rec.kind)?.verification !== undefined;
  const v = validateCursor(db, rec.cursor ?? '', view, {
    allowSchemaWindow: provable,
    acceptAlters: provable,
    reads: columnsRead(rec, next),
    tables: [rec.sourceTable],
  });
  if (v.status === 'ok') {
    if (v.window !== true) return { continues: true };
    // DDL sluice did not make: sync goes on when the copy matches the source, and rebuilds (SCHEMA_WINDOW) when not.
    const t = view.tables.get(rec.sourceTable)?.table;
    const proved = t !== undefined && isCurrent(db, view, rec.sourceTable, rec.seq) && matchesSourceAt(db, rec, view.hw, t.tid);
    if (proved) return { continues: true };
    const message = 'DDL that sluice did not make ran on the source since the cursor, and the copy is not proved to match it';
    return { continues: false, reason: 'SCHEMA_WINDOW', message, rebuildable: true };
  }
  if (v.status === 'error') return stop(v.reason, v.message);
  // As sync decides a cursor that cannot continue (cursorBreak), on the table as it finds it: one it re-arms on
  // opening the source breaks for that re-arm (TABLE_REARMED), which a snapshot repairs.
  const broke = cursorBreak(own, own.table.rearmed && v.reason === 'TABLE_UNARMED' ? { ...v, reason: 'TABLE_REARMED' } : v);
  if (broke.does === 'rebuild') return { continues: false, reason: v.reason, message: v.message, rebuildable: true };
  return stop(broke.reason, v.message);
}

/** Which column each of the source table's columns is as of `rec`'s cursor, when sluice alter recorded a change since. */
function columnOrigins(db: Db, rec: ProjectionRecord, view: SourceView): readonly ColumnOrigin[] | undefined {
  const tid = view.tables.get(rec.sourceTable)?.table.tid;
  if (tid === undefined || rec.cursor === null) return undefined;
  let alters;
  try {
    alters = altersSince(db, decodeCursor(rec.cursor));
  } catch {
    return undefined; // a cursor that cannot be read: the cursor fact says so
  }
  return lineageSince(alters, tid)?.now;
}

/** What whether a `kind` projection of `table` can be built reads (cursor-break.ts unbuildable), with the table as the next sync finds it. */
function buildable(db: Db, view: SourceView, table: string, kind: string): BuildableFacts & { table: { rearmed: boolean } } {
  return { projection: { table, needsImages: kindNamed(kind)?.needsImages !== false }, table: nextSyncCapture(db, view, table) };
}

/** Whether no event of `table` is after `seq`: the source's rows are then the rows at the cursor. */
function isCurrent(db: Db, view: SourceView, table: string, seq: number): boolean {
  const t = view.tables.get(table)?.table;
  if (t === undefined) return false;
  return firstEventMsAfter(db, t.tid, seq) === undefined;
}

/** Source rows on which two map filters (null: every row) disagree; undefined when one no longer reads today's table (a column gone). */
export function filterDisagreements(db: Db, table: string, from: string | null, to: string | null): number | undefined {
  const truth = (f: string | null) => (f === null ? '1' : `CASE WHEN ${f} THEN 1 ELSE 0 END`);
  try {
    return Number(
      db
        .prepare(`SELECT count(*) FROM main.${quoteIdent(table)} WHERE (${truth(from)}) IS NOT (${truth(to)})`)
        .pluck()
        .get() as bigint | number,
    );
  } catch (err) {
    if (err instanceof Error && /no such column/i.test(err.message)) return undefined;
    throw err;
  }
}

/**
 * A table a build of `p` would make that is in the target and not one it
 * replaces: sync's own check (takenTable, checkTablesFree's), which refuses
 * the build with TARGET_TABLE_EXISTS before anything is written.
 */
function targetTableTaken(
  db: Db,
  old: ProjectionRecord | undefined,
  p: CompiledProjection,
  schema = TARGET_SCHEMA,
): { table: string; message: string } | undefined {
  const taken = takenTable({ db, schema }, p, replacedTables(old, p));
  return taken === undefined ? undefined : { table: taken.table, message: taken.error.message };
}

/** The indexes a user added to the tables `rec` made (none when it never built), in the target attached as `schema`. */
export function targetIndexes(db: Db, rec: ProjectionRecord, schema = TARGET_SCHEMA): { name: string; table: string; unique: boolean }[] {
  const owned = rec.cursor === null ? [] : ownedTables(rec);
  return userIndexes(db, schema, owned).map((ix) => ({
    name: ix.name,
    table: ix.table,
    unique: /^CREATE UNIQUE INDEX /i.test(ix.sql),
  }));
}

export interface RebuildCost {
  /** Rows the rebuilt projection would hold (source rows, through a map's filter). */
  readonly rows: number | null;
  /** Rows the live projection holds (null for custom: its tables are its handler's). */
  readonly liveRows: number | null;
  /** Bytes of the live projection's tables and indexes (their pages), when it has any. */
  readonly liveBytes: number | null;
  /**
   * Bytes a shadow needs on the target's file system: twice the live
   * projection's pages (or, for a first build, the source table's), since
   * they are written to the WAL and then copied into the file; for an fts5
   * or custom rebuild, twice the source table's pages more (its staged copy).
   */
  readonly neededBytes: number | null;
  /** Free bytes on the target's file system (fs.statfs), when known. */
  readonly freeBytes: number | null;
}

/** Pages of the tables named (and of their indexes) in `schema`, in bytes; null when dbstat cannot tell. */
function pagesOf(db: Db, schema: string, tables: readonly string[]): number | null {
  if (tables.length === 0) return null;
  try {
    const s = quoteIdent(schema);
    const names = db
      .prepare(`SELECT name FROM ${s}.sqlite_schema WHERE tbl_name COLLATE NOCASE IN (${tables.map(() => '?').join(', ')})`)
      .pluck()
      .all(...tables) as string[];
    if (names.length === 0) return null;
    // One b-tree at a time (aggregate: one row each), so dbstat walks only the projection's pages, not the whole file.
    const stmt = db.prepare('SELECT coalesce(sum(pgsize), 0) FROM dbstat(?, 1) WHERE name = ?').pluck();
    return names.reduce((sum, n) => sum + Number(stmt.get(schema, n) as number | bigint), 0);
  } catch {
    return null;
  }
}

function count(db: Db, sql: string): number | null {
  try {
    return Number(db.prepare(sql).pluck().get() as number | bigint);
  } catch {
    return null;
  }
}

/** Free bytes on the file system of `targetPath`, when known. */
function freeBytesAt(targetPath: string): number | null {
  try {
    const st = fs.statfsSync(path.dirname(path.resolve(targetPath)));
    return Number(st.bavail) * Number(st.bsize);
  } catch {
    return null;
  }
}

/**
 * Whether a rebuild surely fits, told cheaply: twice the bytes of the whole
 * source and target files (page_count x page_size, no walk of their pages)
 * bound what any rebuild's shadow and staged copy need.
 */
function surelyFits(db: Db, targetPath: string): { readonly neededBytes: number; readonly freeBytes: number } | undefined {
  const freeBytes = freeBytesAt(targetPath);
  if (freeBytes === null) return undefined;
  const bytes = (schema: string) =>
    Number(db.pragma(`${quoteIdent(schema)}.page_count`, { simple: true })) *
    Number(db.pragma(`${quoteIdent(schema)}.page_size`, { simple: true }));
  const neededBytes = 2 * (bytes('main') + bytes(TARGET_SCHEMA));
  return neededBytes <= freeBytes ? { neededBytes, freeBytes } : undefined;
}

function rebuildCost(db: Db, targetPath: string, rec: ProjectionRecord | undefined, p: CompiledProjection | undefined): RebuildCost {
  const built = rec !== undefined && rec.cursor !== null;
  const kind = rec === undefined ? undefined : kindNamed(rec.kind);
  const liveTables = !built || kind === undefined ? [] : [...new Set([...kind.uniqueTables(rec.targetTable), ...ownedTables(rec)])];
  const liveBytes = pagesOf(db, TARGET_SCHEMA, liveTables);
  // Its rows: those of the table verify reads (the target table, an fts5 key table); unknown for a custom handler's state.
  const rowTable = !built ? undefined : kind?.rowTable(rec.targetTable);
  const liveRows = rowTable === undefined ? null : count(db, `SELECT count(*) FROM ${quoteIdent(TARGET_SCHEMA)}.${quoteIdent(rowTable)}`);
  const rows =
    p === undefined
      ? null
      : count(db, `SELECT count(*) FROM main.${quoteIdent(p.source.table)}${p.filter === null ? '' : ` WHERE ${p.filter}`}`);
  const base = liveBytes ?? (p === undefined ? null : pagesOf(db, 'main', [p.source.table]));
  const freeBytes = freeBytesAt(targetPath);
  // A replayed rebuild stages a copy of the source table beside the shadow (shadow-build.ts).
  const staged = built && p !== undefined && shadowBuildOf(p) === 'replay' ? pagesOf(db, 'main', [p.source.table]) : 0;
  return { rows, liveRows, liveBytes, neededBytes: base === null || staged === null ? null : (base + staged) * 2, freeBytes };
}

/**
 * The facts of a change from `old` to `next` that the target alone holds
 * (target `schema` of `db`): a user's indexes on its tables, and a table a
 * build would take. For a target fed by a stream (import, subscribe), which
 * has no source to read: what only the source can tell (that the cursor
 * continues on it, how many of its rows two filters disagree on, what a
 * rebuild costs) is left out, so nothing is proved by it.
 */
export function targetAlterFacts(db: Db, schema: string, old: ProjectionRecord, next: CompiledProjection): AlterFacts {
  const taken = targetTableTaken(db, old, next, schema);
  return { ...(taken === undefined ? {} : { targetTableTaken: taken }), targetIndexes: targetIndexes(db, old, schema) };
}

interface GatheredFacts {
  readonly facts: AlterFacts;
  /** Undefined when only a bound was asked for and it told (alterFacts' `cost: 'bound'`). */
  readonly cost: RebuildCost | undefined;
}

/**
 * Everything classifyChange needs to know of `old` (the stored projection,
 * undefined before its first build) and `next`, read in the caller's
 * transaction without writing: explain's read transaction, or sync's step
 * (src/apply/evolution/sync-classify.ts), so that both classify from the same facts.
 */
export function alterFacts(
  db: Db,
  view: SourceView,
  targetPath: string,
  old: ProjectionRecord | undefined,
  next: CompiledProjection | UncompiledProjection,
): GatheredFacts & { readonly cost: RebuildCost };
export function alterFacts(
  db: Db,
  view: SourceView,
  targetPath: string,
  old: ProjectionRecord | undefined,
  next: CompiledProjection | UncompiledProjection,
  options: { readonly cost: 'exact' | 'bound' },
): GatheredFacts;
export function alterFacts(
  db: Db,
  view: SourceView,
  targetPath: string,
  old: ProjectionRecord | undefined,
  next: CompiledProjection | UncompiledProjection,
  /** `exact`: the rebuild's cost counted and measured (explain reports it); `bound`: only whether it fits, cheaply when it surely does (sync). */
  options: { readonly cost: 'exact' | 'bound' } = { cost: 'exact' },
): GatheredFacts {
  const compiled = 'error' in next ? undefined : next;
  const cursor = old === undefined ? undefined : cursorFact(db, old, view, compiled);
  let disagreements: number | undefined;
  if (
    old !== undefined &&
    // (A filter is a map's: the same kind, one of the two with a filter.)
    compiled !== undefined &&
    compiled.kind === old.kind &&
    cursor?.continues === true &&
    isCurrent(db, view, old.sourceTable, old.seq)
  ) {
    const stored = compileProjection(
      // (A custom handler's code is not needed to read its filter: it has none.)
      parseStoredDefinition(old.definition, `stored definition of ${old.name}`, { apply: () => undefined }),
      JSON.parse(old.sourceShape) as SourceShape,
    );
    if (stored.filter !== compiled.filter && (stored.filter !== null || compiled.filter !== null))
      disagreements = filterDisagreements(db, compiled.source.table, stored.filter, compiled.filter);
  }
  // sync only needs to know that a rebuild fits: a walk of the projection's pages and a count of its rows held
  // the target's write lock for ~20 ms at a million rows, so they are only made when the cheap bound does not tell.
  const fits = options.cost === 'bound' ? surelyFits(db, targetPath) : undefined;
  const cost = fits !== undefined ? undefined : rebuildCost(db, targetPath, old, compiled);
  const space =
    fits ??
    (cost?.neededBytes == null || cost.freeBytes === null ? undefined : { neededBytes: cost.neededBytes, freeBytes: cost.freeBytes });
  const columns = old === undefined ? undefined : columnOrigins(db, old, view);
  const taken = compiled === undefined ? undefined : targetTableTaken(db, old, compiled);
  const facts: AlterFacts = {
    ...(taken === undefined ? {} : { targetTableTaken: taken }),
    ...(cursor === undefined ? {} : { cursor }),
    ...(columns === undefined ? {} : { columns }),
    ...(disagreements === undefined ? {} : { filterDisagreements: disagreements }),
    ...(old === undefined ? {} : { targetIndexes: targetIndexes(db, old) }),
    ...(space === undefined ? {} : { space }),
  };
  return { facts, cost };
}
