import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { openDatabase, WalFiles } from '../../src/sqlite/index.ts';

/*
 * WalFiles.pending() tells a follower woken by a write to the source's log
 * whether a commit is under way (frames written past the last published
 * one), so that it waits for the commit only then. A transaction too large
 * for its page cache spills frames into the log before it commits: that is
 * a commit under way, seen from the files alone.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

test('pending is true while a transaction has written frames it has not committed, false once it commits', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-wal-pending-'));
  dirs.push(dir);
  const file = path.join(dir, 'src.db');
  const db = openDatabase(file, { create: true, wal: true });
  db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)');
  db.prepare('INSERT INTO t(v) VALUES (zeroblob(100))').run();
  const log = new WalFiles(file);
  try {
    expect(log.pending()).toBe(false); // the last frame of the log is the last commit's
    db.pragma('cache_size = 8'); // pages beyond these are spilled into the log before the commit
    db.exec('BEGIN');
    const ins = db.prepare('INSERT INTO t(v) VALUES (zeroblob(2000))');
    for (let i = 0; i < 200; i++) ins.run();
    expect(log.pending()).toBe(true);
    db.exec('COMMIT');
    expect(log.pending()).toBe(false);
    // The log started again after a checkpoint: the frames past its end are of the earlier log (other salts).
    db.pragma('wal_checkpoint(RESTART)');
    db.prepare('INSERT INTO t(v) VALUES (zeroblob(100))').run();
    expect(log.pending()).toBe(false);
  } finally {
    log.close();
    db.close();
  }
});

test('pending cannot be told without the log index', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-wal-pending-'));
  dirs.push(dir);
  const file = path.join(dir, 'rollback.db');
  const db = openDatabase(file, { create: true });
  db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY)');
  const log = new WalFiles(file);
  expect(db.pragma('journal_mode', { simple: true })).not.toBe('wal');
  expect(log.pending()).toBeUndefined();
  log.close();
  db.close();
});
