import type { Db } from './connection.ts';

/*
 * The one way sluice runs a write transaction that may await (a custom
 * handler is async): BEGIN (or a SAVEPOINT when one is already open on the
 * connection), then COMMIT, or ROLLBACK when `fn` throws or its result says
 * so. Control flow never goes through a thrown sentinel: a step that must
 * undo its writes and report (a suspension) returns a result that
 * `keep` refuses, and gets it back after the rollback.
 */

export interface TransactionOptions<T> {
  /** `immediate` takes the write lock at BEGIN (import); `deferred` at the first write (sync reads the source first). Default deferred. */
  readonly mode?: 'deferred' | 'immediate';
  /** Whether to commit for this result (default: always). Refused: rolled back, and the result is returned. */
  readonly keep?: (result: T) => boolean;
  /** Runs after the rollback of a throw, before it propagates (drop TEMP work tables...). */
  readonly onRollback?: () => void;
  /** Runs just before COMMIT and just after it (crash-point tests). */
  readonly beforeCommit?: () => void;
  readonly afterCommit?: () => void;
}

let savepoints = 0;

export async function inTransaction<T>(db: Db, fn: () => Promise<T> | T, options: TransactionOptions<T> = {}): Promise<T> {
  const nested = db.inTransaction;
  const name = nested ? `sluice_sp${++savepoints}` : '';
  db.exec(nested ? `SAVEPOINT ${name}` : options.mode === 'immediate' ? 'BEGIN IMMEDIATE' : 'BEGIN');
  let result: T;
  try {
    result = await fn();
  } catch (err) {
    undo(db, nested, name);
    options.onRollback?.();
    throw err;
  }
  if (options.keep !== undefined && !options.keep(result)) {
    undo(db, nested, name);
    return result;
  }
  if (nested) {
    db.exec(`RELEASE ${name}`);
    return result;
  }
  options.beforeCommit?.();
  db.exec('COMMIT');
  options.afterCommit?.();
  return result;
}

/**
 * Undoes the transaction or savepoint. A conflict clause or an I/O error may
 * have ended the transaction already: then there is nothing left to undo,
 * and an unconditional ROLLBACK would throw and hide the first error.
 */
function undo(db: Db, nested: boolean, name: string): void {
  if (!db.inTransaction) return;
  if (!nested) {
    db.exec('ROLLBACK');
    return;
  }
  db.exec(`ROLLBACK TO ${name}`);
  db.exec(`RELEASE ${name}`);
}
