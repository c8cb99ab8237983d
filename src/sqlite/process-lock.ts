import fs from 'node:fs';
import os from 'node:os';
import { isSqliteBusy } from '../errors.ts';
import { openDatabase, type Db } from './connection.ts';
import { closeDatabase } from './connection-state.ts';
import { beginHeld, commitHeld, rollbackOpen } from './transaction.ts';

/*
 * A lock one process at a time holds, that the operating system frees when
 * the process ends however it ends (SIGKILL, a crash, a power cut): nothing
 * to clean up by hand, no pid to check for liveness (and no pid reused by
 * another program to be fooled by). It is SQLite's own write lock on a
 * small database file of its own, in rollback-journal mode: the holder keeps
 * a write transaction open (BEGIN IMMEDIATE: a RESERVED lock), so another
 * BEGIN IMMEDIATE fails with SQLITE_BUSY (after waiting out a look's
 * moment), in another process or in this one, while reads still work. The
 * holder first commits a row saying who it is (pid, host, command, since
 * when), which a refused process reads to name it. The file is never deleted: a process that opened it just
 * before would lock the unlinked file while a third made a new one.
 */

interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** What the holder runs, as it said when it took the lock (e.g. "sync --follow"). */
  readonly command: string;
  /** When it took the lock, ms since the epoch. */
  readonly sinceMs: number;
}

/**
 * Who holds a lock, for an error that names it: `process PID (COMMAND on
 * HOST, since TIME)`, the command after `commandPrefix` ("sluice " where the
 * holder said its subcommand alone); "another process" when it has not said.
 */
export function describeHolder(h: LockHolder | undefined, commandPrefix = ''): string {
  return h === undefined
    ? 'another process'
    : `process ${h.pid} (${commandPrefix}${h.command}${h.host === '' ? '' : ` on ${h.host}`}, since ${new Date(h.sinceMs).toISOString()})`;
}

export interface ProcessLock {
  /** The lock file. */
  readonly file: string;
  /** Frees the lock (idempotent). The operating system frees it too when the process ends. */
  release(): void;
}

/** The lock was taken (`taken`), or another process holds it (`heldBy`, undefined when it has not said who it is yet). */
type LockAttempt = { readonly taken: ProcessLock } | { readonly heldBy: LockHolder | undefined };

const HOLDER_TABLE = '_sluice_lock_holder';
/** How long the holder's commit of its row waits for a refused process reading it, and a refused process for that commit. */
const ROW_WAIT_MS = 2000;
/**
 * How long taking the lock waits for a look (lockHeld) to let go: a look
 * holds it for a moment, a holder for as long as it runs. Without it, a
 * follower starting while plan, health or a run's /healthz looked was
 * refused, naming whoever held the lock last.
 */
const LOOK_WAIT_MS = 200;

/**
 * Takes the lock at `file` (made when missing) for this process, or says
 * who holds it. Waits for the lock only the moment of a look (LOOK_WAIT_MS).
 *
 * @example
 * const a = tryProcessLock('cache.db-follower', 'sync --follow');
 * if ('heldBy' in a) throw new Error(`held by process ${a.heldBy?.pid ?? '?'}`);
 * try { follow(); } finally { a.taken.release(); }
 */
export function tryProcessLock(file: string, command: string): LockAttempt {
  // Opening reads the schema, which waits out a holder's commit of its row; taking the lock waits out a look only.
  const db = openDatabase(file, { create: true, role: 'lock file', busyTimeoutMs: ROW_WAIT_MS });
  let kept = false;
  try {
    db.pragma(`busy_timeout = ${LOOK_WAIT_MS}`);
    if (!beginImmediate(db)) return { heldBy: readHolder(db) };
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${HOLDER_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, host TEXT NOT NULL, command TEXT NOT NULL, since_ms INTEGER NOT NULL)`,
    );
    db.prepare(`INSERT OR REPLACE INTO ${HOLDER_TABLE} VALUES (1, ?, ?, ?, ?)`).run(process.pid, os.hostname(), command, Date.now());
    db.pragma(`busy_timeout = ${ROW_WAIT_MS}`);
    commitHeld(db);
    db.pragma(`busy_timeout = ${LOOK_WAIT_MS}`);
    // The lock was free for the moment of that commit: another process may have taken it meanwhile (it has not said who it is yet).
    if (!beginImmediate(db)) return { heldBy: undefined };
    kept = true;
    let held = true;
    return {
      taken: {
        file,
        release() {
          if (!held) return;
          held = false;
          try {
            rollbackOpen(db);
          } finally {
            closeDatabase(db);
          }
        },
      },
    };
  } finally {
    if (!kept) {
      rollbackOpen(db);
      closeDatabase(db);
    }
  }
}

/**
 * Whether another connection holds the lock at `file` now, writing nothing:
 * no lock file is made (a missing one is free) and none is written (the
 * look takes the lock for a moment, inside a transaction that writes
 * nothing, then lets go). `heldBy` as tryProcessLock says it.
 */
export function lockHeld(file: string): { readonly heldBy: LockHolder | undefined } | undefined {
  if (!fs.existsSync(file)) return undefined;
  const db = openDatabase(file, { role: 'lock file', busyTimeoutMs: ROW_WAIT_MS });
  try {
    db.pragma('busy_timeout = 0');
    if (!beginImmediate(db)) return { heldBy: readHolder(db) };
    rollbackOpen(db);
    return undefined;
  } finally {
    closeDatabase(db);
  }
}

function beginImmediate(db: Db): boolean {
  try {
    beginHeld(db, 'immediate');
    return true;
  } catch (err) {
    if (isSqliteBusy(err)) return false;
    throw err;
  }
}

function readHolder(db: Db): LockHolder | undefined {
  db.pragma(`busy_timeout = ${ROW_WAIT_MS}`);
  try {
    const r = db.prepare(`SELECT pid, host, command, since_ms FROM ${HOLDER_TABLE} WHERE id = 1`).get() as
      { pid: bigint; host: string; command: string; since_ms: bigint } | undefined;
    return r === undefined ? undefined : { pid: Number(r.pid), host: r.host, command: r.command, sinceMs: Number(r.since_ms) };
  } catch {
    return undefined; // no row yet (its first holder has not committed it), or unreadable: the refusal says "another process"
  }
}
