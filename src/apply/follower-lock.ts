import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Db } from '../sqlite/connection.ts';
import { SluiceError } from '../errors.ts';

/*
 * One follower per target. Two processes feeding one target fight: two
 * `subscribe --follow` share one durable consumer and the first stalls once
 * the second stops; two `sync --follow` with different definitions rebuild
 * a projection in turn. So a follower holds a lock on its target while it
 * runs, and a second one is refused, naming the holder and the fix.
 *
 * The lock is SQLite's own write lock on a small file beside the target,
 * `<target>.follower-lock`: the holder keeps a BEGIN IMMEDIATE transaction
 * open for as long as it runs. The operating system drops that lock when the
 * process ends in any way (SIGKILL and a crash included), so a dead holder
 * never keeps it, with no pid to check or stale file to clean up. A waiting
 * reader may still read the file (a RESERVED lock lets readers in), which is
 * how the refusal names the holder. The file stays when released: removing
 * it could let a second process lock a new file while the first holds the old.
 */

export interface FollowerLock {
  /** The lock file. */
  readonly file: string;
  /** Gives the lock up (idempotent). */
  release(): void;
}

interface Holder {
  readonly who: string;
  readonly pid: number;
  readonly host: string;
  readonly sinceMs: number;
}

/** The lock file of a target. */
export function followerLockFile(targetPath: string): string {
  return `${path.resolve(targetPath)}.follower-lock`;
}

/**
 * Takes the target's follower lock for `who` (a command line, e.g. `sluice
 * subscribe --follow`), or throws TARGET_HAS_FOLLOWER naming the process
 * that holds it. Hold it until the follower ends, then call release().
 *
 * @example
 * const lock = acquireFollowerLock('cache.db', 'sluice subscribe --follow');
 * try { await follow(); } finally { lock.release(); }
 */
export function acquireFollowerLock(targetPath: string, who: string): FollowerLock {
  const file = followerLockFile(targetPath);
  const db = openDatabase(file, { create: true, busyTimeoutMs: 0, role: 'follower lock' });
  try {
    if (!tryLock(db)) throw held(targetPath, file, readHolder(db));
    db.exec(
      'CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY CHECK (id = 1), who TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL, since_ms INTEGER NOT NULL)',
    );
    db.prepare('INSERT OR REPLACE INTO holder (id, who, pid, host, since_ms) VALUES (1, ?, ?, ?, ?)').run(
      who,
      process.pid,
      os.hostname(),
      Date.now(),
    );
    // Committed so that a refused process can read who holds it; then held again at once.
    db.exec('COMMIT');
    // Another process can take it between the two: then that one is the follower, and this one is refused.
    if (!tryLock(db)) throw held(targetPath, file, readHolder(db));
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    db.close();
    throw err;
  }
  let released = false;
  return {
    file,
    release: () => {
      if (released) return;
      released = true;
      try {
        if (db.inTransaction) db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}

/** BEGIN IMMEDIATE without waiting: false when another connection holds the write lock. */
function tryLock(db: Db): boolean {
  try {
    db.exec('BEGIN IMMEDIATE');
    return true;
  } catch (err) {
    if (isBusy(err)) return false;
    throw err;
  }
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED');
}

/** The holder the lock file names, if it can be read now (not while the holder commits it). */
function readHolder(db: Db): Holder | undefined {
  try {
    const r = db.prepare('SELECT who, pid, host, since_ms FROM holder WHERE id = 1').get() as
      { who: string; pid: bigint; host: string; since_ms: bigint } | undefined;
    return r === undefined ? undefined : { who: r.who, pid: Number(r.pid), host: r.host, sinceMs: Number(r.since_ms) };
  } catch {
    return undefined;
  }
}

function held(targetPath: string, file: string, h: Holder | undefined): SluiceError {
  const local = h !== undefined && h.host === os.hostname();
  const holder =
    h === undefined
      ? 'another process'
      : `${h.who} (pid ${h.pid}${local ? '' : ` on ${h.host}`}, since ${new Date(h.sinceMs).toISOString()})`;
  const stop = h !== undefined && local ? `kill ${h.pid}` : 'stop it';
  return new SluiceError(
    'TARGET_HAS_FOLLOWER',
    `Target ${targetPath} is already followed by ${holder}, which holds ${file}. One follower per target: a second one would fight it over the target (and over its broker consumer). Stop that one first (${stop}), or follow into another target.`,
  );
}
