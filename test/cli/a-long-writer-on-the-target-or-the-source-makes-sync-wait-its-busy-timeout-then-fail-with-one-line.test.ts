import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { PythonWriter } from '../support/python-writer.ts';
import { sync } from '../../src/apply/sync.ts';
import { setJournalMode } from './support/source-state.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, expectOneLineError, dumpTables, write } from './support/cli.ts';

/*
 * Another process holding a file's write lock (a Python sqlite3 writer in
 * BEGIN IMMEDIATE) is waited for up to --busy-timeout MS; past it, sync
 * fails with one line naming the file, that another process holds its write
 * lock, and the flag: exit 1, nothing of the batch committed. Once the lock
 * is released the next sync resumes exactly.
 */

let dir: string;

beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

async function hold(file: string, begin = 'BEGIN IMMEDIATE'): Promise<PythonWriter> {
  const w = PythonWriter.start();
  expect((await w.send({ open: file })).ok).toBe(true);
  const r = await w.send({ sql: begin });
  expect(r.ok, r.error).toBe(true);
  return w;
}

describe('a long writer on a file sync writes', () => {
  test('on the target: sync waits --busy-timeout, fails with TARGET_BUSY naming the target and the flag, the target unchanged, and resumes once it is released', async () => {
    const src = trackerSource(path.join(dir, 'a.db'), ['issues']);
    const target = path.join(dir, 'a-cache.db');
    await sync(src, target);
    write(src, "UPDATE issues SET state = 'closed' WHERE number = 1");
    const before = dumpTables(target);
    const w = await hold(target);
    try {
      const r = await runCliAsync(['sync', src, target, '--busy-timeout', '300']);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'TARGET_BUSY');
      expect(r.stderr).toContain(target);
      expect(r.stderr).toContain('another process holds its write lock');
      expect(r.stderr).toContain('--busy-timeout');
      // The bound the flag set, not 8 retries of 5 s (said, not timed: speed is bench/'s).
      expect(r.stderr).toContain('waited 300 ms');
      expect(dumpTables(target)).toEqual(before);
    } finally {
      await w.send({ sql: 'ROLLBACK' });
      await w.stop();
    }
    const again = await runCliAsync(['sync', src, target]);
    expect(again.status, again.stderr).toBe(0);
    expect(dumpTables(target, ['issues'])).toEqual(dumpTables(src, ['issues']));
  });

  test('on a WAL source: sync needs no write lock there to apply, so it applies everything (its acknowledgement is informational and may lag)', async () => {
    const src = trackerSource(path.join(dir, 'b.db'), ['issues']);
    const target = path.join(dir, 'b-cache.db');
    await sync(src, target);
    write(src, "UPDATE issues SET state = 'closed' WHERE number = 1");
    const w = await hold(src);
    try {
      const r = await runCliAsync(['sync', src, target, '--busy-timeout', '300']);
      expect(r.status, r.stderr).toBe(0);
      expect(dumpTables(target, ['issues'])).toEqual(dumpTables(src, ['issues']));
    } finally {
      await w.send({ sql: 'ROLLBACK' });
      await w.stop();
    }
  });

  test('on a source whose capture must be re-armed: sync fails with SOURCE_BUSY naming the source and the flag, writes nothing, and re-arms and resumes once it is released', async () => {
    const src = trackerSource(path.join(dir, 'c.db'), ['issues']);
    const target = path.join(dir, 'c-cache.db');
    await sync(src, target);
    write(src, "UPDATE issues SET state = 'closed' WHERE number = 1");
    write(src, 'DROP TRIGGER _sluice_t1_upd'); // the next open re-arms it: a write to the source
    const before = dumpTables(target);
    const w = await hold(src);
    try {
      const r = await runCliAsync(['sync', src, target, '--busy-timeout', '300']);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'SOURCE_BUSY');
      expect(r.stderr).toContain(src);
      expect(r.stderr).toContain('another process holds its write lock');
      expect(r.stderr).toContain('--busy-timeout');
      expect(r.stderr).toContain('waited 300 ms');
      expect(dumpTables(target)).toEqual(before);
    } finally {
      await w.send({ sql: 'ROLLBACK' });
      await w.stop();
    }
    const again = await runCliAsync(['sync', src, target]);
    expect(again.status, again.stderr).toBe(0);
    expect(dumpTables(target, ['issues'])).toEqual(dumpTables(src, ['issues']));
  });

  test('on a rollback-journal source, an exclusive lock keeps sync from reading it: SOURCE_BUSY naming the source, the target unchanged, and it resumes once released', async () => {
    const src = trackerSource(path.join(dir, 'd.db'), ['issues']);
    const target = path.join(dir, 'd-cache.db');
    await sync(src, target);
    setJournalMode(src, 'delete');
    write(src, "UPDATE issues SET state = 'closed' WHERE number = 1");
    const before = dumpTables(target);
    const w = await hold(src, 'BEGIN EXCLUSIVE');
    try {
      const r = await runCliAsync(['sync', src, target, '--busy-timeout', '300']);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'SOURCE_BUSY');
      expect(r.stderr).toContain(src);
      expect(r.stderr).toContain('--busy-timeout');
      expect(dumpTables(target)).toEqual(before);
    } finally {
      await w.send({ sql: 'ROLLBACK' });
      await w.stop();
    }
    const again = await runCliAsync(['sync', src, target]);
    expect(again.status, again.stderr).toBe(0);
    expect(dumpTables(target, ['issues'])).toEqual(dumpTables(src, ['issues']));
  });
});
