import type { Db } from './connection.ts';
import { refuseTransactionControl } from './statements.ts';
import { writeTransactionSync } from './transaction.ts';
import { InvalidInputError, SluiceError } from '../errors.ts';
import { fromDriver, mayBeLossyText, type SqlValue } from './codec.ts';

export interface QueryResult {
  readonly columns: readonly string[];
  readonly rows: readonly (readonly SqlValue[])[];
  /** Rows changed by a write statement (0 for reads). */
  readonly changes: number;
  readonly wrote: boolean;
}

/**
 * Runs one SQL statement under a row budget, as contract 002's raw result
 * queries: a write (INSERT/UPDATE/DELETE/REPLACE, WITH ... writes, RETURNING)
 * runs in its own transaction, or in a savepoint inside the caller's; the
 * statement is finalized before commit or rollback, and going over the
 * budget rolls back so no hidden write commits. ATTACH/DETACH, PRAGMA,
 * transaction control (BEGIN, COMMIT, SAVEPOINT...), VACUUM and a string of
 * several statements are refused (QUERY_REFUSED, exit 2) before anything runs.
 *
 * @example
 * runQuery(db, "UPDATE issues SET state = 'closed' WHERE number = 7 RETURNING number", { maxRows: 10 });
 */
export function runQuery(
  db: Db,
  sql: string,
  options: {
    readonly maxRows?: number;
    /** For a write: called once it ran, inside its transaction; what it throws rolls the write back. */
    readonly beforeCommit?: () => void;
  } = {},
): QueryResult {
  const maxRows = options.maxRows ?? 1000;
  if (!Number.isSafeInteger(maxRows) || maxRows < 0)
    throw new InvalidInputError('BAD_MAX_ROWS', `--max-rows ${maxRows} must be a whole number >= 0.`);
  let stmt: ReturnType<Db['prepare']>;
  try {
    stmt = db.prepare(sql);
  } catch (cause) {
    // better-sqlite3 refuses a string of several statements with a RangeError, before SQLite compiles the rest.
    if (cause instanceof RangeError && /more than one statement/.test(cause.message)) throw refused(db, SEVERAL_STATEMENTS);
    throw new InvalidInputError('BAD_SQL', `The query does not compile: ${(cause as Error).message}. Pass exactly one SQL statement.`, {
      cause,
    });
  }
  const why = REFUSED_STATEMENTS[firstKeyword(sql)];
  if (why !== undefined) throw refused(db, why(firstKeyword(sql)));
  const write = !stmt.readonly;
  if (!write) return stmt.reader ? collect(stmt, maxRows, false) : runRead(stmt);
  // In its own BEGIN IMMEDIATE transaction, or a savepoint inside the caller's.
  return writeTransactionSync(
    db,
    () => {
      // A write with RETURNING is read through the iterator, which reports no
      // change count: take it from changes() once the statement has finished.
      const r = stmt.reader
        ? { ...collect(stmt, maxRows, true), changes: Number(db.prepare('SELECT changes()').pluck().get() as bigint | number) }
        : runWrite(stmt);
      options.beforeCommit?.();
      return r;
    },
    { mode: 'immediate' },
  );
}

/*
 * Statements a query does not run: each would step outside the one
 * transaction, on the one file, that its row budget and rollback cover.
 * Refused before anything runs, as a usage error (exit 2): the SQL argument
 * is not one `query` accepts. Keyed by the statement's first keyword.
 */
const ATTACH = (kw: string) =>
  `${kw} is not allowed: query works on this one file, and ${kw} would reach another database file, outside its transaction and row budget. Run sluice query on that file instead`;
const TRANSACTION = (kw: string) =>
  `${kw} is not allowed: query runs its statement in its own transaction (committed when it succeeds, rolled back over --max-rows), which ${kw} would end or nest in. Pass the statement alone; for several statements in one transaction, use the sqlite3 shell or your own program`;
const REFUSED_STATEMENTS: Readonly<Record<string, (kw: string) => string>> = {
  ATTACH,
  DETACH: ATTACH,
  PRAGMA: () =>
    "PRAGMA is not allowed: a pragma reads or changes a setting of the connection or of the file (journal mode, foreign keys, user_version) outside query's transaction. To read one, use its pragma function in a SELECT, e.g. SELECT * FROM pragma_table_info('issues'); to change one, use the sqlite3 shell",
  ...refuseTransactionControl(TRANSACTION),
  VACUUM: () =>
    'VACUUM is not allowed: it rewrites the whole file and cannot run inside the transaction query runs each statement in. Use the sqlite3 shell: sqlite3 FILE VACUUM',
};
const SEVERAL_STATEMENTS =
  'the SQL holds more than one statement, and query runs exactly one (its transaction and row budget cover one statement). Run one statement per sluice query, or use the sqlite3 shell for a script';

function refused(db: Db, why: string): InvalidInputError {
  return new InvalidInputError('QUERY_REFUSED', `Query on ${db.name}: ${why}. Nothing was run.`, { exitCode: 2 });
}

/** The statement's first keyword, upper-cased, after whitespace and comments. */
function firstKeyword(sql: string): string {
  const rest = sql.replace(/^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?(?:\*\/|$))*/, '');
  return (/^[A-Za-z]+/.exec(rest)?.[0] ?? '').toUpperCase();
}

function runWrite(stmt: ReturnType<Db['prepare']>): QueryResult {
  const info = (stmt as unknown as { run: () => { changes: number } }).run();
  return { columns: [], rows: [], changes: info.changes, wrote: true };
}

/** A read-only statement that returns no data (REINDEX of a table with no index): it runs, and changes nothing. */
function runRead(stmt: ReturnType<Db['prepare']>): QueryResult {
  (stmt as unknown as { run: () => unknown }).run();
  return { columns: [], rows: [], changes: 0, wrote: false };
}

function collect(stmt: ReturnType<Db['prepare']>, maxRows: number, wrote: boolean): QueryResult {
  const columns = stmt.columns().map((c) => c.name);
  const rows: SqlValue[][] = [];
  const it = stmt.raw(true).iterate() as IterableIterator<unknown[]>;
  try {
    for (const raw of it) {
      if (rows.length >= maxRows) {
        throw new SluiceError(
          'ROW_BUDGET_EXCEEDED',
          `The query returned more than --max-rows ${maxRows} rows${wrote ? '; its writes were rolled back and nothing was committed' : ''}. Raise --max-rows or narrow the query.`,
        );
      }
      rows.push(raw.map((v) => (mayBeLossyText(v) ? v : fromDriver(v ?? null))));
    }
  } finally {
    // Finalize (reset) the statement before any COMMIT or ROLLBACK.
    it.return?.();
  }
  return { columns, rows, changes: 0, wrote };
}
