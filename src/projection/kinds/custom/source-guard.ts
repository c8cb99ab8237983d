import type { Statement } from 'better-sqlite3';
import type { Db } from '../../../sqlite/index.ts';
import { connectionState, slot, cachedStatement } from '../../../sqlite/index.ts';
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

const guards = slot('custom-source-guard', () => ({ token: '', verdicts: new Map<string, Verdict>() }));

/** Why a statement would write the source (null: it would not), and whether it may change a schema. */
interface Verdict {
  readonly why: string | null;
  readonly changesSchema: boolean;
}

/** What changes when a verdict may no longer hold: the source's schema and TEMP's. */
const SCHEMAS = `SELECT (SELECT schema_version FROM main.pragma_schema_version()) || ',' || (SELECT schema_version FROM temp.pragma_schema_version())`;

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
  const token = String(cachedStatement(db, SCHEMAS, 'pluck').get());
  if (token === g.token) return;
  g.verdicts.clear();
  g.token = token;
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
    v = sourceWrite(db, sql, parameters);
    if (v.changesSchema) g.verdicts.clear();
    else {
      if (g.verdicts.size >= LIMIT) g.verdicts.clear();
      g.verdicts.set(sql, v);
    }
  }
  if (v.why !== null)
    throw new FailClosedError(
      'CUSTOM_WROTE_SOURCE',
      `The handler of custom projection ${projection} ran a statement that would write the source database (${v.why}): ${excerpt(sql)}. In a sync the source is the connection's main database, so a raw SQL statement's table name without a schema is the source's. The statement was not run, and nothing of this batch was kept. A handler may read the source but never write it: write through ctx.db's query and schema builders (they resolve names in the target), with the names in ctx.tables.`,
      { projection, statement: excerpt(sql) },
    );
}

/** What `sql` would do to the source. (`parameters` only because a statement runs with all of its bound: they change no opcode.) */
function sourceWrite(db: Db, sql: string, parameters: readonly unknown[]): Verdict {
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
  let changesSchema = false;
  for (const [, op, p1, p2, p3, p4] of program) {
    if (SCHEMA_OPS.has(op as string)) changesSchema = true;
    if (why !== null) continue;
    if (op === 'Transaction' && p1 === 0 && p2 !== 0) why = 'it writes to it';
    else if (op === 'JournalMode' && p1 === 0 && p3 !== -1) why = 'it changes its journal mode';
    else if (op === 'Vacuum' && p1 === 0) why = 'it vacuums it';
    else if (op === 'Checkpoint' && (p1 === 0 || !otherDatabases(db).has(Number(p1)))) why = 'it checkpoints its write-ahead log';
    else if (op === 'SqlExec' && typeof p4 === 'string') {
      const inner = sourceWrite(db, p4, []);
      why = inner.why;
      changesSchema ||= inner.changesSchema;
    }
  }
  return { why, changesSchema };
}

/** The indexes of the connection's databases other than main (a checkpoint of another index, SQLITE_MAX_DB, is of all of them). */
function otherDatabases(db: Db): Set<number> {
  return new Set((db.pragma('database_list') as { seq: number | bigint }[]).map((r) => Number(r.seq)).filter((s) => s !== 0));
}

function excerpt(sql: string): string {
  const one = sql.replace(/\s+/g, ' ').trim();
  return one.length > 200 ? `${one.slice(0, 200)}…` : one;
}
