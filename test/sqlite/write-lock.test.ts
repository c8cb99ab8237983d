// a writer waiting for a write lock gets it once freed and fails busy past its timeout
import { test, expect } from '../support/fixtures.ts';
import { PythonWriter } from '../support/python-writer.ts';
import { takeWriteLock } from '../../src/sqlite/index.ts';

/*
 * takeWriteLock waits for another process's write lock by polling (not
 * SQLite's busy handler, which sleeps longer and longer): it gets the lock
 * once the other writer commits, throws SQLITE_BUSY once the connection's
 * busy_timeout has passed, and leaves that busy_timeout as it found it.
 */

test('a writer waiting for the write lock of a Python writer gets it once that one commits, fails with SQLITE_BUSY past its busy_timeout, and keeps its busy_timeout', async ({
  makeDb,
}) => {
  const { db, file } = makeDb('t.db', 'CREATE TABLE t (x); PRAGMA journal_mode = WAL');
  const py = PythonWriter.start();
  try {
    await py.send({ open: file });
    const take = () => db.prepare('INSERT INTO t VALUES (1)').run();

    // Held past a 150 ms timeout: busy, as SQLite says it.
    db.pragma('busy_timeout = 150');
    expect((await py.send({ sql: 'BEGIN IMMEDIATE' })).ok).toBe(true);
    db.exec('BEGIN');
    await expect(takeWriteLock(db, take)).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
    db.exec('ROLLBACK');
    expect(Number(db.pragma('busy_timeout', { simple: true }))).toBe(150);

    // Freed while it waits: it gets the lock, and its write commits.
    db.pragma('busy_timeout = 5000');
    db.exec('BEGIN');
    const waiting = takeWriteLock(db, take);
    setTimeout(() => void py.send({ sql: 'COMMIT' }), 200);
    await waiting;
    db.exec('COMMIT');
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(1n);
    expect(Number(db.pragma('busy_timeout', { simple: true }))).toBe(5000);
  } finally {
    await py.stop();
  }
});
