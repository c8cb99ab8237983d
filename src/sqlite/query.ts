import type { Db } from './connection.ts';
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
 * budget rolls back so no hidden write commits.
 *
 * @example
 * runQuery(db, "UPDATE issues SET state = 'closed' WHERE number = 7 RETURNING number", { maxRows: 10 });
 */
export function runQuery(db: Db, sql: string, options: { readonly maxRows?: number } = {}): QueryResult {
  const maxRows = options.maxRows ?? 1000;
  if (!Number.isSafeInteger(maxRows) || maxRows < 0) throw new InvalidInputError('BAD_MAX_ROWS', `--max-rows ${maxRows} must be a whole number >= 0.`);
  let stmt: ReturnType<Db['prepare']>;
  try {
    stmt = db.prepare(sql);
  } catch (cause) {
    throw new InvalidInputError('BAD_SQL', `The query does not compile: ${(cause as Error).message}. Pass exactly one SQL statement.`, { cause });
  }
  const write = !stmt.readonly;
  if (!write) return collect(stmt, maxRows, false);
  const nested = db.inTransaction;
  const name = 'sluice_query';
  db.exec(nested ? `SAVEPOINT ${name}` : 'BEGIN IMMEDIATE');
  try {
    // A write with RETURNING is read through the iterator, which reports no
    // change count: take it from changes() once the statement has finished.
    const result = stmt.reader ? { ...collect(stmt, maxRows, true), changes: Number(db.prepare('SELECT changes()').pluck().get() as bigint | number) } : runWrite(stmt);
    db.exec(nested ? `RELEASE ${name}` : 'COMMIT');
    return result;
  } catch (err) {
    if (nested) {
      db.exec(`ROLLBACK TO ${name}`);
      db.exec(`RELEASE ${name}`);
    } else if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

function runWrite(stmt: ReturnType<Db['prepare']>): QueryResult {
  const info = (stmt as unknown as { run: () => { changes: number } }).run();
  return { columns: [], rows: [], changes: info.changes, wrote: true };
}

function collect(stmt: ReturnType<Db['prepare']>, maxRows: number, wrote: boolean): QueryResult {
  const columns = stmt.columns().map((c) => c.name);
  const rows: SqlValue[][] = [];
  const it = stmt.raw(true).iterate() as IterableIterator<unknown[]>;
  try {
    for (const raw of it) {
      if (rows.length >= maxRows) {
        throw new SluiceError('ROW_BUDGET_EXCEEDED', `The query returned more than --max-rows ${maxRows} rows${wrote ? '; its writes were rolled back and nothing was committed' : ''}. Raise --max-rows or narrow the query.`);
      }
      rows.push(raw.map((v) => (mayBeLossyText(v) ? v : fromDriver(v ?? null))));
    }
  } finally {
    // Finalize (reset) the statement before any COMMIT or ROLLBACK.
    it.return?.();
  }
  return { columns, rows, changes: 0, wrote };
}
