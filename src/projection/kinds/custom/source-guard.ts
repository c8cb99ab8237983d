import type { Statement } from 'better-sqlite3';
import type { Db } from '../../../sqlite/index.ts';
import { connectionState, slot, foldIdent, quoteIdent, virtualTableObject } from '../../../sqlite/index.ts';
import { FailClosedError } from '../../../errors.ts';

/*
 * In a sync a handler runs on the connection that holds the batch's
 * transaction, where the source is the main database (the target attached
 * beside it), so its rows and its cursor commit together. A raw SQL
 * statement that names a table without a schema therefore names the
 * source's. Reading it is allowed; writing it is not: a row put into a table
 * sluice does not capture leaves no trace at all, and a write to a captured
 * one is journaled as a user's and spreads to every mirror.
 *
 * In an import or a subscribe there is no source on the connection: the
 * target is its main database (and a segment being imported is attached
 * beside it). What a handler could damage there is checked the same way:
 * sluice's own tables, the other projections' tables, the databases on the
 * connection (an ATTACH, a DETACH, a write to any database but the target
 * and TEMP: the segment sluice reads the batch from). Which database is the
 * target is told by each page (guardPage).
 *
 * So each statement a handler runs is refused before it runs when its
 * program (EXPLAIN) would change the source's file: SQLite opens a write
 * transaction on every database a statement writes (schema changes, pragmas
 * that write the header, and what a TEMP trigger or a TEMP view's INSTEAD OF
 * trigger writes included), so a write transaction on database 0 (main)
 * refuses it; so do a change of main's journal mode, a checkpoint or VACUUM
 * of main, and SQL a statement runs by itself (PRAGMA optimize's ANALYZE) is
 * checked the same way.
 *
 * The verdict is kept per statement text while the source's schema and
 * TEMP's stay as they were: an unqualified name can find another table
 * after either changes, and only TEMP objects can reach from the target into
 * the source (a trigger or view in the target cannot name another
 * database). Both are read when a page of handler calls begins
 * (guardPage), which also holds the source's snapshot for the rest of the
 * batch's transaction, so no other connection changes its schema under the
 * page; within the page only the handler's own statements run on the
 * connection, and one that may change a schema (its program sets a schema
 * cookie, drops an object, or moves a savepoint) drops every verdict before
 * it runs.
 */

/** How many statement texts' verdicts a connection keeps (a handler that inlines values makes a new text per value). */
const LIMIT = 1000;

const guards = slot('custom-source-guard', () => ({
  token: '',
  /** The schema the target is attached as: not main in a sync (main is the source), main in an import or a subscribe (no source). */
  target: '',
  verdicts: new Map<string, Verdict>(),
  /** sluice's own tables and indexes (`_sluice_...`) in each database but the source, by `database:rootpage`. */
  own: new Map<string, string>(),
  /** The target's projections' tables, by `database:rootpage` of each table and index, and by virtual table object (fts5). */
  owned: new Map<string, OwnedTable>(),
  /** How to read which tables each projection of an attached database owns (set by whoever attached it: useProjectionOwners). */
  owners: undefined as ProjectionOwners | undefined,
}));

/** A table of a projection of the target. */
interface OwnedTable {
  readonly table: string;
  readonly projection: string;
}

/**
 * Which tables the projections of the database attached as `schema` own:
 * each table's name folded (foldIdent) to its projection's name. The
 * target's bookkeeping is the apply layer's, which attaches the target and
 * tells the guard how to read it (useProjectionOwners).
 */
export type ProjectionOwners = (db: Db, schema: string) => ReadonlyMap<string, string>;

/**
 * Tells the guard of `db`'s handlers how to read which tables each
 * projection of an attached target owns, so that a handler's statement that
 * writes another projection's table is refused (CUSTOM_WROTE_PROJECTION).
 */
export function useProjectionOwners(db: Db, owners: ProjectionOwners): void {
  connectionState(db).get(guards).owners = owners;
}

/** Why a statement would write the source, or sluice's own tables (null: it would not), and whether it may change a schema. */
interface Verdict {
  readonly why: string | null;
  /** What `why` is about: the source, or sluice's own tables and the connection's databases. */
  readonly of?: 'sluice';
  readonly changesSchema: boolean;
  /** The tables it drops, by name (DropTable). */
  readonly drops: readonly string[];
  /** What it writes in the databases other than the source: `database:rootpage` of each b-tree opened for writing, emptied or destroyed, and each virtual table object it updates. */
  readonly writes: readonly string[];
}

/**
 * What changes when a verdict may no longer hold: the schema of each of the
 * connection's databases (the source's and TEMP's decide what a name finds;
 * the target's, where sluice's own tables are).
 */
function schemasToken(db: Db): string {
  // (Not schema.pragma_schema_version(): its table-valued form reads main's whatever the schema named.)
  return (db.pragma('database_list') as { name: string }[])
    .map((r) => String(db.pragma(`${quoteIdent(r.name)}.schema_version`, { simple: true })))
    .join(',');
}

/** Opcodes of a statement that may change a schema, or undo such a change. */
const SCHEMA_OPS = new Set([
  'SetCookie',
  'ParseSchema',
  'DropTable',
  'DropIndex',
  'DropTrigger',
  'VCreate',
  'VDestroy',
  'Savepoint',
  'AutoCommit',
  'Expire',
]);

/** The columns of an EXPLAIN and an EXPLAIN QUERY PLAN statement, which run nothing. */
const EXPLAINS = new Set(['addr,opcode,p1,p2,p3,p4,p5,comment', 'id,parent,notused,detail']);

/** Whether the source is the connection's main database: a sync's connection, whose target is attached as another schema. */
const sourceIsMain = (target: string) => target !== 'main';

/**
 * Begins a page of handler calls on `db`, in the batch's transaction, for
 * the target attached as `target`: reads the schema versions of the
 * connection's databases (which holds the source's snapshot until the
 * transaction ends), and drops the verdicts when one changed since the last
 * page, or the target is another.
 */
export function guardPage(db: Db, target: string): void {
  const g = connectionState(db).get(guards);
  const token = schemasToken(db);
  if (token === g.token && target === g.target) return;
  g.verdicts.clear();
  g.target = target;
  g.own = ownTables(db, sourceIsMain(target));
  g.owned = g.owners === undefined ? new Map() : projectionTables(db, g.owners, target);
  g.token = token;
}

/** The tables and indexes of the projections of the target (by `database:rootpage`), and their virtual tables (by the object EXPLAIN names). */
function projectionTables(db: Db, owners: ProjectionOwners, target: string): Map<string, OwnedTable> {
  const out = new Map<string, OwnedTable>();
  for (const r of db.pragma('database_list') as { seq: number | bigint; name: string }[]) {
    const seq = Number(r.seq);
    if (r.name !== target) continue;
    const byTable = owners(db, r.name);
    if (byTable.size === 0) continue;
    const schema = quoteIdent(r.name);
    const objects = db
      .prepare(`SELECT rootpage, tbl_name, type, sql FROM ${schema}.sqlite_schema WHERE type IN ('table', 'index')`)
      .all() as {
      rootpage: number | bigint | null;
      tbl_name: string;
      type: string;
      sql: string | null;
    }[];
    const virtual = new Map<string, OwnedTable>();
    for (const o of objects) {
      const projection = byTable.get(foldIdent(o.tbl_name));
      if (projection === undefined) continue;
      const owned = { table: o.tbl_name, projection };
      if (Number(o.rootpage ?? 0) > 0) out.set(`${seq}:${Number(o.rootpage)}`, owned);
      else if (o.type === 'table' && /^\s*CREATE\s+VIRTUAL/i.test(o.sql ?? '')) {
        virtual.set(foldIdent(o.tbl_name), owned);
        const vtab = virtualTableObject(db, `${schema}.${quoteIdent(o.tbl_name)}`);
        if (vtab !== undefined) out.set(vtab, owned);
      }
    }
    // A virtual table's shadow tables (an fts5 index's name_data, name_idx, ...) are its projection's too.
    for (const o of objects) {
      if (Number(o.rootpage ?? 0) <= 0) continue;
      const m = /^(.*)_(data|idx|content|docsize|config)$/i.exec(o.tbl_name);
      const owned = m === null ? undefined : virtual.get(foldIdent(m[1] as string));
      if (owned !== undefined) out.set(`${seq}:${Number(o.rootpage)}`, owned);
    }
  }
  return out;
}

/** The root pages of sluice's own tables and their indexes (`_sluice_...`) in each database but the source (main, when `skipMain`), as `database:rootpage`. */
function ownTables(db: Db, skipMain: boolean): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of db.pragma('database_list') as { seq: number | bigint; name: string }[]) {
    const seq = Number(r.seq);
    if (seq === 0 && skipMain) continue;
    const rows = db
      .prepare(`SELECT rootpage, tbl_name FROM ${quoteIdent(r.name)}.sqlite_schema WHERE tbl_name GLOB '_sluice_*' AND rootpage > 0`)
      .raw(true)
      .all() as [number | bigint, string][];
    for (const [root, name] of rows) out.set(`${seq}:${Number(root)}`, name);
  }
  return out;
}

/**
 * Throws, before `sql` runs, when it would change what a handler of custom
 * projection `projection` must not: CUSTOM_WROTE_SOURCE the source (in a
 * sync, the connection's main database), CUSTOM_WROTE_SLUICE sluice's own
 * tables or the connection's databases, CUSTOM_WROTE_PROJECTION another
 * projection's table. `target`: the schema its target is attached as.
 * Call within a page (guardPage). A statement SQLite cannot prepare throws
 * SQLite's own error, as running it would.
 */
export function refuseSourceWrite(
  db: Db,
  sql: string,
  parameters: readonly unknown[],
  projection: string,
  handed: ReadonlySet<string>,
  target: string,
): void {
  const g = connectionState(db).get(guards);
  // After a statement of the page that may have changed a schema: a table dropped and one made may have swapped root pages.
  if (g.token === '' || g.target !== target) guardPage(db, target);
  const synced = sourceIsMain(target);
  let v = g.verdicts.get(sql);
  if (v === undefined) {
    v = sourceWrite(db, sql, parameters, synced);
    if (v.changesSchema) {
      g.verdicts.clear();
      g.token = '';
    } else {
      if (g.verdicts.size >= LIMIT) g.verdicts.clear();
      g.verdicts.set(sql, v);
    }
  }
  const mine = (table: string) => handed.has(foldIdent(table));
  // A protected rebuild's shadow of its handler's own tables (_sluice_build_...) is the handler's to fill, as ctx.tables names it.
  const sluiceTable = [
    ...v.writes.flatMap((w) => g.own.get(w) ?? []),
    ...v.drops.filter((d) => d.toLowerCase().startsWith('_sluice_')),
  ].find((t) => !mine(t));
  const sluiceWhy = v.of === 'sluice' ? v.why : sluiceTable === undefined ? null : `it writes sluice's own table ${sluiceTable}`;
  if (sluiceWhy !== null)
    throw new FailClosedError(
      'CUSTOM_WROTE_SLUICE',
      `The handler of custom projection ${projection} ran a statement that sluice refuses (${sluiceWhy}): ${excerpt(sql)}. sluice's own tables hold every projection's cursor and definition, and the connection's databases are ${synced ? 'the source and the target' : 'the target and what sluice attaches to read a batch (in an import or a subscribe there is no source on it)'}. The statement was not run, and nothing of this batch was kept. Write only the tables the definition declares (ctx.tables), through ctx.db.`,
      { projection, statement: excerpt(sql) },
    );
  for (const w of v.writes) {
    const owned = g.owned.get(w);
    if (owned !== undefined && owned.projection !== projection && !mine(owned.table))
      throw new FailClosedError(
        'CUSTOM_WROTE_PROJECTION',
        `The handler of custom projection ${projection} ran a statement that writes table ${owned.table} of projection ${owned.projection}: ${excerpt(sql)}. That table is ${owned.projection}'s, which sluice keeps equal to its source; a row the handler put there, or took out, would stay until a rebuild. The statement was not run, and nothing of this batch was kept. Give the handler's own tables names no other projection of the target uses, declare them (tables), and write them by the names ctx.tables gives.`,
        { projection, statement: excerpt(sql), table: owned.table, owner: owned.projection },
      );
  }
  if (v.why !== null)
    throw new FailClosedError(
      'CUSTOM_WROTE_SOURCE',
      `The handler of custom projection ${projection} ran a statement that would write the source database (${v.why}): ${excerpt(sql)}. In a sync the source is the connection's main database, so a raw SQL statement's table name without a schema is the source's. The statement was not run, and nothing of this batch was kept. A handler may read the source but never write it: write through ctx.db's query and schema builders (they resolve names in the target), with the names in ctx.tables.`,
      { projection, statement: excerpt(sql) },
    );
}

/**
 * What `sql` would do to the source (the connection's main database, when
 * `synced`), or to the databases on the connection. (`parameters` only
 * because a statement runs with all of its bound: they change no opcode.)
 */
function sourceWrite(db: Db, sql: string, parameters: readonly unknown[], synced: boolean): Verdict {
  let explain: Statement;
  try {
    explain = db.prepare(`EXPLAIN ${sql}`);
  } catch {
    // Not a statement EXPLAIN takes: SQLite's own error for it (a syntax error, no such table), or it is an EXPLAIN itself.
    const stmt = db.prepare(sql);
    const runsNothing =
      stmt.reader &&
      EXPLAINS.has(
        stmt
          .columns()
          .map((c) => c.name)
          .join(','),
      );
    return { why: runsNothing ? null : 'sluice cannot tell what it writes', changesSchema: !runsNothing, writes: [], drops: [] };
  }
  const program = explain
    .safeIntegers(false)
    .raw(true)
    .all(...parameters) as unknown[][];
  let why: string | null = null;
  let of: 'sluice' | undefined;
  let changesSchema = false;
  const writes: string[] = [];
  const drops: string[] = [];
  for (const [, op, p1, p2, p3, p4] of program) {
    if (SCHEMA_OPS.has(op as string)) changesSchema = true;
    // OpenWrite (cursor, root page, database), Destroy (root page, register, database), Clear (root page, database), VUpdate (..., the virtual table).
    if (op === 'OpenWrite') writes.push(`${Number(p3)}:${Number(p2)}`);
    else if (op === 'Destroy') writes.push(`${Number(p3)}:${Number(p1)}`);
    else if (op === 'Clear') writes.push(`${Number(p2)}:${Number(p1)}`);
    else if (op === 'VUpdate' && typeof p4 === 'string') writes.push(p4);
    else if (op === 'DropTable' && typeof p4 === 'string') drops.push(p4);
    if (why !== null) continue;
    if (op === 'Function' && typeof p4 === 'string' && /^sqlite_(attach|detach)\(/.test(p4)) {
      why = 'it attaches or detaches a database';
      of = 'sluice';
    } else if (!synced) {
      // No source on the connection: main is the target, 1 is TEMP; any other is one sluice attached (a segment being imported).
      if (op === 'Transaction' && Number(p1) > 1 && p2 !== 0) {
        why = `it writes database ${databaseName(db, Number(p1))}, which sluice attached to read from`;
        of = 'sluice';
      }
    } else if (op === 'Transaction' && p1 === 0 && p2 !== 0) why = 'it writes to it';
    else if (op === 'JournalMode' && p1 === 0 && p3 !== -1) why = 'it changes its journal mode';
    else if (op === 'Vacuum' && p1 === 0) why = 'it vacuums it';
    else if (op === 'Checkpoint' && (p1 === 0 || !otherDatabases(db).has(Number(p1)))) why = 'it checkpoints its write-ahead log';
    else if (op === 'SqlExec' && typeof p4 === 'string') {
      const inner = sourceWrite(db, p4, [], synced);
      why = inner.why;
      of = inner.of;
      changesSchema ||= inner.changesSchema;
      writes.push(...inner.writes);
      drops.push(...inner.drops);
    }
  }
  return { why, changesSchema, writes, drops, ...(of === undefined ? {} : { of }) };
}

/** The name of the connection's database at index `seq`. */
function databaseName(db: Db, seq: number): string {
  const row = (db.pragma('database_list') as { seq: number | bigint; name: string }[]).find((r) => Number(r.seq) === seq);
  return row?.name ?? String(seq);
}

/** The indexes of the connection's databases other than main (a checkpoint of another index, SQLITE_MAX_DB, is of all of them). */
function otherDatabases(db: Db): Set<number> {
  return new Set((db.pragma('database_list') as { seq: number | bigint }[]).map((r) => Number(r.seq)).filter((s) => s !== 0));
}

function excerpt(sql: string): string {
  const one = sql.replace(/\s+/g, ' ').trim();
  return one.length > 200 ? `${one.slice(0, 200)}…` : one;
}
