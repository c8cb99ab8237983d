import type { Db } from './connection.ts';
import { isSqliteBusy } from '../errors.ts';
import { cachedStatement } from './statement-cache.ts';

/** How often a writer waiting for a file's write lock tries again. */
export const LOCK_POLL_MS = 1;

/**
 * Runs `take`, a statement that takes a write lock, waiting for the lock up
 * to the connection's busy_timeout by trying again every LOCK_POLL_MS.
 * SQLite's own busy handler sleeps longer and longer (1, 2, 5, 10 ... 100
 * ms) and does not wake when the lock is freed: a follower waiting behind a
 * few short transactions of another writer (a protected rebuild's steps)
 * slept through the gaps between them. The connection's busy_timeout is put
 * back as it was; a busy past it is thrown as SQLite would throw it.
 */
export async function takeWriteLock(db: Db, take: () => void): Promise<void> {
  // (Prepared once per connection: a follower takes the lock for every batch, however small.)
  const timeoutMs = Number(cachedStatement(db, 'PRAGMA busy_timeout', 'pluck').get());
  if (timeoutMs <= 0) return take();
  const deadline = Date.now() + timeoutMs;
  cachedStatement(db, 'PRAGMA busy_timeout = 0').run();
  try {
    for (;;) {
      try {
        return take();
      } catch (err) {
        if (!isSqliteBusy(err) || Date.now() >= deadline) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
    }
  } finally {
    cachedStatement(db, `PRAGMA busy_timeout = ${timeoutMs}`).run();
  }
}
