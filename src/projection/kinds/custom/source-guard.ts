import type { Statement } from 'better-sqlite3';
import type { Db } from '../../../sqlite/index.ts';
import { connectionState, slot, cachedStatement, quoteIdent } from '../../../sqlite/index.ts';
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
  verdicts: new Map<string, Verdict>(),
  own: new Map<number, Map<number, string>>(),
}));

/** Why a statement would write the source, or sluice's own tables (null: it would not), and whether it may change a schema. */
interface Verdict {
  readonly why: string | null;
  /** What `why` is about: the source, or sluice's own tables and the connection's databases. */
  readonly of?: 'sluice';
  readonly changesSchema: boolean;
}

/**
 * What changes when a verdict may no longer hold: the schema of each of the
 * connection's databases (the source's and TEMP's decide what a name finds;
 * the target's, where sluice's own tables are).
 */
function schemasSql(db: Db): string {
  const names = (db.pragma('database_list') as { name: string }[]).map((r) => r.name);
  return `SELECT ${names.map((n) => `(SELECT schema_version FROM ${quoteIdent(n)}.pragma_schema_version())`).join(" || ',' || ")}`;
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

/**
 * Begins a page of handler calls on `db`, in the batch's transaction: reads
 * the source's and TEMP's schema versions (which holds the source's
 * snapshot until the transaction ends), and drops the verdicts when either
 * changed since the last page.
 */
export function guardPage(db: Db): void {
  const g = connectionState(db).get(guards);
  const token = String(cachedStatement(db, schemasSql(db), 'pluck').get());
  if (token === g.token) return;
  g.verdicts.clear();
  g.own = ownTables(db);
  g.token = token;
}

/** The root pages of sluice's own tables and their indexes (`_sluice_...`) in each database but the source, by database index. */
function ownTables(db: Db): Map<number, Map<number, string>> {
  const out = new Map<number, Map<number, string>>();
  for (const r of db.pragma('database_list') as { seq: number | bigint; name: string }[]) {
    const seq = Number(r.seq);
    if (seq === 0) continue;
    const rows = db
      // (Not a protected rebuild's shadow of a handler's own tables, _sluice_build_..., which its handler fills.)
      .prepare(
        `SELECT rootpage, tbl_name FROM ${quoteIdent(r.name)}.sqlite_schema WHERE tbl_name GLOB '_sluice_*' AND tbl_name NOT GLOB '_sluice_build_*' AND rootpage > 0`,
      )
      .raw(true)
      .all() as [number | bigint, string][];
    out.set(seq, new Map(rows.map(([root, name]) => [Number(root), name])));
  }
  return out;
}

/**
 * Throws CUSTOM_WROTE_SOURCE, before `sql` runs, when it would change the
 * source (the connection's main database) for custom projection
 * `projection`. Call within a page (guardPage). A statement SQLite cannot
 * prepare throws SQLite's own error, as running it would.
 */
export function refuseSourceWrite(db: Db, sql: string, parameters: readonly unknown[], projection: string): void {
  const g = connectionState(db).get(guards);
  let v = g.verdicts.get(sql);
  if (v === undefined) {
    v = sourceWrite(db, sql, parameters, g.own);
    if (v.changesSchema) g.verdicts.clear();
    else {
      if (g.verdicts.size >= LIMIT) g.verdicts.clear();
      g.verdicts.set(sql, v);
    }
  }
  if (v.why !== null && v.of === 'sluice')
    throw new FailClosedError(
      'CUSTOM_WROTE_SLUICE',
      `The handler of custom projection ${projection} ran a statement that sluice refuses (${v.why}): ${excerpt(sql)}. sluice's own tables hold every projection's cursor and definition, and the connection's databases are the source and the target. The statement was not run, and nothing of this batch was kept. Write only the tables the definition declares (ctx.tables), through ctx.db.`,
      { projection, statement: excerpt(sql) },
    );
  if (v.why !== null)
    throw new FailClosedError(
      'CUSTOM_WROTE_SOURCE',
      `The handler of custom projection ${projection} ran a statement that would write the source database (${v.why}): ${excerpt(sql)}. In a sync the source is the connection's main database, so a raw SQL statement's table name without a schema is the source's. The statement was not run, and nothing of this batch was kept. A handler may read the source but never write it: write through ctx.db's query and schema builders (they resolve names in the target), with the names in ctx.tables.`,
      { projection, statement: excerpt(sql) },
    );
}

/** What `sql` would do to the source. (`parameters` only because a statement runs with all of its bound: they change no opcode.) */
function sourceWrite(db: Db, sql: string, parameters: readonly unknown[], own: ReadonlyMap<number, ReadonlyMap<number, string>>): Verdict {
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
    return { why: runsNothing ? null : 'sluice cannot tell what it writes', changesSchema: !runsNothing };
  }
  const program = explain
    .safeIntegers(false)
    .raw(true)
    .all(...parameters) as unknown[][];
  let why: string | null = null;
  let of: 'sluice' | undefined;
  let changesSchema = false;
  for (const [, op, p1, p2, p3, p4] of program) {
    if (SCHEMA_OPS.has(op as string)) changesSchema = true;
    if (why !== null) continue;
    const sluice = sluiceWrite(op, p1, p2, p3, p4, own);
    if (sluice !== undefined) {
      why = sluice;
      of = 'sluice';
    } else if (op === 'Transaction' && p1 === 0 && p2 !== 0) why = 'it writes to it';
    else if (op === 'JournalMode' && p1 === 0 && p3 !== -1) why = 'it changes its journal mode';
    else if (op === 'Vacuum' && p1 === 0) why = 'it vacuums it';
    else if (op === 'Checkpoint' && (p1 === 0 || !otherDatabases(db).has(Number(p1)))) why = 'it checkpoints its write-ahead log';
    else if (op === 'SqlExec' && typeof p4 === 'string') {
      const inner = sourceWrite(db, p4, [], own);
      why = inner.why;
      of = inner.of;
      changesSchema ||= inner.changesSchema;
    }
  }
  return { why, changesSchema, ...(of === undefined ? {} : { of }) };
}

/** Why opcode `op` writes one of sluice's own tables, or attaches or detaches a database (undefined: it does not). */
function sluiceWrite(
  op: unknown,
  p1: unknown,
  p2: unknown,
  p3: unknown,
  p4: unknown,
  own: ReadonlyMap<number, ReadonlyMap<number, string>>,
): string | undefined {
  const table = (db: unknown, root: unknown) => own.get(Number(db))?.get(Number(root));
  if (op === 'Function' && typeof p4 === 'string' && /^sqlite_(attach|detach)\(/.test(p4)) return 'it attaches or detaches a database';
  // OpenWrite (cursor, root page, database), Destroy (root page, register, database), Clear (root page, database).
  const written = op === 'OpenWrite' ? table(p3, p2) : op === 'Destroy' ? table(p3, p1) : op === 'Clear' ? table(p2, p1) : undefined;
  if (written !== undefined) return `it writes sluice's own table ${written}`;
  if (op === 'DropTable' && typeof p4 === 'string' && p4.toLowerCase().startsWith('_sluice_')) return `it drops sluice's own table ${p4}`;
  return undefined;
}

/** The indexes of the connection's databases other than main (a checkpoint of another index, SQLITE_MAX_DB, is of all of them). */
function otherDatabases(db: Db): Set<number> {
  return new Set((db.pragma('database_list') as { seq: number | bigint }[]).map((r) => Number(r.seq)).filter((s) => s !== 0));
}

function excerpt(sql: string): string {
  const one = sql.replace(/\s+/g, ' ').trim();
  return one.length > 200 ? `${one.slice(0, 200)}…` : one;
}
