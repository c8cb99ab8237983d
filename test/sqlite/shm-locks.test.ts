// Reading the wal-index leaves this process's SQLite locks on -shm in place
import fs from 'node:fs';
import path from 'node:path';
import { expect, describe } from 'vitest';
import { test, runPython } from '../support/fixtures.ts';
import { openDatabase, WalFiles } from '../../src/sqlite/index.ts';
import { shmDmsLock } from '../support/shm-lock.ts';

/*
 * WalFiles reads a database's `-shm` with a file descriptor of its own.
 * Closing any descriptor of a file releases every POSIX lock the process
 * holds on it, SQLite's too: the next process to open the database then
 * starts the wal-index again, truncating `-shm` under this process's
 * mapping of it (sluice run died with SIGBUS when a follower stopped while
 * another process opened the source). POSIX locks: not on Windows.
 */
describe.skipIf(process.platform === 'win32')('WalFiles and the locks on -shm', () => {
  test('closing a WalFiles leaves the locks of the connections still open; another process then reads and writes beside them', ({
    tmp,
  }) => {
    const file = path.join(tmp, 'app.db');
    const db = openDatabase(file, { create: true, wal: true });
    try {
      db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
      db.prepare("INSERT INTO t(v) VALUES ('a')").run();
      expect(shmDmsLock(file)).toBe('held'); // the connection holds it: the probe can tell
      for (let i = 0; i < 3; i++) {
        const log = new WalFiles(file);
        expect(log.end()?.frame).toBeGreaterThan(0);
        expect(log.pending()).toBe(false);
        log.close();
        expect(shmDmsLock(file)).toBe('held');
      }
      runPython(
        `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("INSERT INTO t(v) VALUES ('from python')")
con.commit()`,
        [file],
      );
      expect(db.prepare('SELECT v FROM t ORDER BY id').pluck().all()).toEqual(['a', 'from python']);
    } finally {
      db.close();
    }
  });

  test('a -shm made again after the last connection closed is read afresh, not through the file that was removed', ({ tmp }) => {
    const file = path.join(tmp, 'app.db');
    let db = openDatabase(file, { create: true, wal: true });
    db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
    for (let i = 0; i < 5; i++) db.prepare("INSERT INTO t(v) VALUES ('a')").run();
    const log = new WalFiles(file);
    const before = log.end();
    expect(before?.frame).toBeGreaterThanOrEqual(5);
    const inode = fs.statSync(`${file}-shm`).ino;
    db.close(); // the last connection: SQLite checkpoints and removes -wal and -shm
    expect(fs.existsSync(`${file}-shm`)).toBe(false);
    expect(log.end()).toBeUndefined();
    db = openDatabase(file, { wal: true });
    try {
      db.prepare("INSERT INTO t(v) VALUES ('b')").run();
      expect(fs.statSync(`${file}-shm`).ino).not.toBe(inode);
      const after = log.end();
      expect(after?.salt).not.toBe(before?.salt);
      // The new log holds the one commit since, not the five read before.
      expect(after?.frame).toBeGreaterThan(0);
      expect(after?.frame).toBeLessThan(before?.frame ?? 0);
    } finally {
      log.close();
      db.close();
    }
  });
});

describe.skipIf(process.platform !== 'linux')('WalFiles over many databases in turn', () => {
  test('thirty databases read, closed and removed in turn leave at most one -shm descriptor open, and a refused import of a live database keeps its locks', async ({
    tmp,
  }) => {
    const shmFds = () =>
      fs.readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return /-shm( \(deleted\))?$/.test(fs.readlinkSync(`/proc/self/fd/${fd}`));
        } catch {
          return false;
        }
      }).length;
    const before = shmFds();
    for (let i = 0; i < 30; i++) {
      const dir = path.join(tmp, `round-${i}`);
      fs.mkdirSync(dir);
      const file = path.join(dir, 'db.db');
      const db = openDatabase(file, { create: true, wal: true });
      db.exec('CREATE TABLE t(x)');
      const log = new WalFiles(file);
      expect(log.end()).toBeDefined();
      log.close();
      db.close();
      fs.rmSync(dir, { recursive: true });
    }
    expect(shmFds() - before).toBeLessThanOrEqual(1);

    // importFile given a database this process has open: refused before its bytes are read, so no lock is lost.
    const { importFile } = await import('../../src/export/index.ts');
    const live = path.join(tmp, 'live.db');
    const db = openDatabase(live, { create: true, wal: true });
    try {
      db.exec('CREATE TABLE t(x)');
      db.prepare('INSERT INTO t VALUES (1)').run();
      await expect(importFile(path.join(tmp, 'cache.db'), live)).rejects.toThrow(/live\.db-wal/);
      expect(shmDmsLock(live)).toBe('held');
    } finally {
      db.close();
    }
  });
});
