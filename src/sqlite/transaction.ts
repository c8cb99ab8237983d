import type { Db } from './db.ts';
import { connectionState, slot } from './connection-state.ts';
import { cachedStatement } from './statement-cache.ts';
import { checkpointScrubbed, forgetScrubbed } from './scrub.ts';

/*
 * The one module that begins, commits and rolls back transactions: every
 * transaction in src/ goes through it, and the lint (eslint.config.js) fails
 * on a BEGIN, COMMIT, ROLLBACK, SAVEPOINT or RELEASE written anywhere else
 * (docs/architecture.md, "Transactions"). What it offers:
 *
 * - writeTransaction / writeTransactionSync: a write transaction, deferred
 *   (the write lock at the first write: sync reads the source first) or
 *   immediate (at BEGIN), whose body may await (a custom handler is async,
 *   which better-sqlite3's own db.transaction() refuses). Inside an open
 *   transaction it is a savepoint instead, named from one counter per
 *   connection. withWriteTransaction is the public, immediate one.
 * - withReadTransaction: one snapshot for everything `fn` reads (taken at
 *   BEGIN by a first read), committed; joins an open transaction.
 * - readSession / readSessionSync: a snapshot held across the several reads
 *   of explain, verify and health, always rolled back (they write nothing).
 * - writeAlone: a write in a transaction of its own, best effort (a failure
 *   recorded after the transaction that failed has rolled back).
 * - beginHeld / commitHeld / rollbackOpen: a transaction held across calls
 *   (a process lock, a group of import batches, a reader's pin of a WAL),
 *   and the end of whatever transaction is open (a damaged file found).
 *
 * Control flow never goes through a thrown sentinel: a step that must undo
 * its writes and report (a suspension) returns a result that `keep`
 * refuses, and gets it back after the rollback. A conflict clause or an I/O
 * error may have ended the transaction already: then there is nothing left
 * to undo, and an unconditional ROLLBACK would throw and hide the first error.
 */

/** Statements that end, open or nest a transaction (the ones only this module runs; a tool that runs a script in its own transaction refuses them). */
export const TRANSACTION_KEYWORDS = ['BEGIN', 'COMMIT', 'END', 'ROLLBACK', 'SAVEPOINT', 'RELEASE'] as const;

/** When a write transaction takes the write lock: at its first write (`deferred`), or at BEGIN (`immediate`). */
type WriteMode = 'deferred' | 'immediate';

interface TransactionOptions<T> {
  /** `immediate` takes the write lock at BEGIN (import); `deferred` at the first write (sync reads the source first). Default deferred. */
  readonly mode?: WriteMode;
  /** Whether to commit for this result (default: always). Refused: rolled back, and the result is returned. */
  readonly keep?: (result: T) => boolean;
  /** Runs after the rollback of a throw, before it propagates (drop TEMP work tables...). */
  readonly onRollback?: () => void;
  /** Run just before COMMIT and just after it (crash-point tests); not for a savepoint. */
  readonly beforeCommit?: () => void;
  readonly afterCommit?: () => void;
}

/** What `open` began: a transaction, or a savepoint of this name inside the open one. */
interface Frame {
  readonly db: Db;
  readonly savepoint: string | undefined;
}

/** The savepoints made on a connection so far: their names are unique per connection however bodies interleave. */
const savepoints = slot('savepoint-counter', () => ({ made: 0 }));

const BEGIN: Readonly<Record<WriteMode | 'read', string>> = { deferred: 'BEGIN', immediate: 'BEGIN IMMEDIATE', read: 'BEGIN DEFERRED' };
/** A deferred transaction takes its snapshot at the first read: this one, at BEGIN. */
const FIRST_READ = 'SELECT 1 FROM main.sqlite_schema LIMIT 1';

function open(db: Db, mode: WriteMode): Frame {
  if (!db.inTransaction) {
    cachedStatement(db, BEGIN[mode]).run();
    return { db, savepoint: undefined };
  }
  const name = `sluice_sp${++connectionState(db).get(savepoints).made}`;
  db.exec(`SAVEPOINT ${name}`);
  return { db, savepoint: name };
}

/** Undoes the transaction or savepoint, unless SQLite ended the transaction already. */
function undo(f: Frame): void {
  const { db, savepoint } = f;
  if (savepoint === undefined) forgetScrubbed(db);
  if (!db.inTransaction) return;
  if (savepoint === undefined) {
    cachedStatement(db, 'ROLLBACK').run();
    return;
  }
  db.exec(`ROLLBACK TO ${savepoint}`);
  db.exec(`RELEASE ${savepoint}`);
}

function failed(f: Frame, options: TransactionOptions<never>): void {
  undo(f);
  options.onRollback?.();
}

/**
 * Commits (or releases) `f` for `result`, or rolls it back when `keep`
 * refuses it. A COMMIT that fails (busy, a deferred constraint) is rolled
 * back, as a throw of the body is, before the error propagates: the
 * connection is never left inside a transaction nobody will end.
 */
function finish<T>(f: Frame, result: T, options: TransactionOptions<T>): T {
  if (options.keep !== undefined && !options.keep(result)) {
    undo(f);
    return result;
  }
  try {
    if (f.savepoint !== undefined) {
      f.db.exec(`RELEASE ${f.savepoint}`);
      return result;
    }
    options.beforeCommit?.();
    cachedStatement(f.db, 'COMMIT').run();
  } catch (err) {
    failed(f, options);
    throw err;
  }
  checkpointScrubbed(f.db);
  options.afterCommit?.();
  return result;
}

/**
 * Runs `fn` in a write transaction (a savepoint when one is open on `db`):
 * committed when it returns, unless `keep` refuses its result; rolled back
 * when it throws.
 *
 * @example
 * const out = await writeTransaction(db, async () => applyBatch(db), { mode: 'immediate', keep: (r) => r.kind !== 'suspended' });
 */
export async function writeTransaction<T>(db: Db, fn: () => Promise<T> | T, options: TransactionOptions<T> = {}): Promise<T> {
  const f = open(db, options.mode ?? 'deferred');
  let result: T;
  try {
    result = await fn();
  } catch (err) {
    failed(f, options);
    throw err;
  }
  return finish(f, result, options);
}

/** writeTransaction for a body that does not await (the caller stays synchronous). */
export function writeTransactionSync<T>(db: Db, fn: () => T, options: TransactionOptions<T> = {}): T {
  const f = open(db, options.mode ?? 'deferred');
  let result: T;
  try {
    result = fn();
    if (typeof (result as { then?: unknown } | null)?.then === 'function')
      throw new TypeError('writeTransactionSync: the body returned a promise; use writeTransaction for a body that awaits.');
  } catch (err) {
    failed(f, options);
    throw err;
  }
  return finish(f, result, options);
}

/**
 * Runs `fn` in a BEGIN IMMEDIATE transaction: SQLite's ordinary write lock,
 * waiting up to the busy timeout, so it can run beside live writers. Inside
 * an open transaction, a savepoint of it.
 *
 * @example
 * withWriteTransaction(db, () => db.prepare('DELETE FROM notes WHERE done').run());
 */
export function withWriteTransaction<T>(db: Db, fn: () => T): T {
  return writeTransactionSync(db, fn, { mode: 'immediate' });
}

/**
 * Runs `fn` in one read transaction, so everything it reads is one
 * snapshot (taken at once, not at its first read); inside an open
 * transaction, in that one.
 *
 * @example
 * const [a, b] = withReadTransaction(db, () => [countIssues(db), countComments(db)]);
 */
export function withReadTransaction<T>(db: Db, fn: () => T): T {
  if (db.inTransaction) return fn();
  // (Prepared once per connection: a follower's poll reads in thousands of these.)
  cachedStatement(db, BEGIN.read).run();
  try {
    cachedStatement(db, FIRST_READ).get();
    const out = fn();
    cachedStatement(db, 'COMMIT').run();
    return out;
  } catch (err) {
    rollbackOpen(db);
    throw err;
  }
}

/**
 * Runs `fn` in a read session: one transaction whose snapshot its first read
 * takes and every later read shares (explain, verify, health read a source
 * and a target across many statements), always rolled back, since it
 * writes nothing (its connections are often read-only).
 */
export async function readSession<T>(db: Db, fn: () => Promise<T> | T): Promise<T> {
  cachedStatement(db, BEGIN.deferred).run();
  try {
    return await fn();
  } finally {
    rollbackOpen(db);
  }
}

/** readSession for a body that does not await. */
export function readSessionSync<T>(db: Db, fn: () => T): T {
  cachedStatement(db, BEGIN.deferred).run();
  try {
    return fn();
  } finally {
    rollbackOpen(db);
  }
}

/**
 * Runs `fn` in a deferred write transaction of its own, best effort: true
 * when it committed; false when it could not (a busy or full file, a
 * transaction still open), with whatever was open rolled back. For what is
 * recorded after the transaction that failed (a projection's failure).
 */
export function writeAlone(db: Db, fn: () => void): boolean {
  try {
    cachedStatement(db, BEGIN.deferred).run();
    fn();
    cachedStatement(db, 'COMMIT').run();
    return true;
  } catch {
    rollbackOpen(db);
    return false;
  }
}

/**
 * Begins a transaction that outlives the call, ended later by commitHeld or
 * rollbackOpen: a process lock held open (`immediate`), a group of batches
 * committed together, a reader's pin (`read`: its snapshot taken now).
 * Throws as BEGIN does (SQLITE_BUSY for an immediate one whose lock another
 * connection holds, past the busy timeout).
 */
export function beginHeld(db: Db, mode: WriteMode | 'read'): void {
  cachedStatement(db, BEGIN[mode]).run();
  if (mode !== 'read') return;
  try {
    cachedStatement(db, FIRST_READ).get();
  } catch (err) {
    rollbackOpen(db);
    throw err;
  }
}

/** Commits the transaction open on `db`, if one is (SQLite may have ended it); a COMMIT that fails is rolled back, then thrown. */
export function commitHeld(db: Db): void {
  if (!db.inTransaction) return;
  try {
    cachedStatement(db, 'COMMIT').run();
  } catch (err) {
    rollbackOpen(db);
    throw err;
  }
  checkpointScrubbed(db);
}

/** Rolls back the transaction open on `db`, if one is (a held one let go, a damaged file found mid-transaction). */
export function rollbackOpen(db: Db): void {
  if (db.inTransaction) cachedStatement(db, 'ROLLBACK').run();
  forgetScrubbed(db);
}
