// a damaged target file fails sync and health with one line naming it and the source is untouched
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import {
  runCliAsync,
  makeDir,
  removeDir,
  trackerSource,
  expectOneLineError,
  dumpTables,
  write,
  scalar,
  sha256,
} from '../../cli/support/cli.ts';

/*
 * A target whose file is damaged (a page of its mirror table overwritten
 * with garbage; the header and the schema are intact, so it still opens):
 * sync and health each give one line naming the target, that the file is
 * damaged (SQLITE_CORRUPT), and the fix (restore it, or delete it and sync
 * again to rebuild it). Exit 1, and the source is untouched. Deleting it
 * and syncing rebuilds it equal to the source.
 */

let dir: string;
let src: string;
let target: string;

/** Overwrites the root page of `table` in `file` with garbage (the header and the schema stay intact). */
function damage(file: string, table: string): void {
  const root = Number(scalar(file, 'SELECT rootpage FROM sqlite_schema WHERE name = ?', table));
  const pageSize = Number(scalar(file, 'PRAGMA page_size'));
  expect(fs.existsSync(`${file}-wal`) && fs.statSync(`${file}-wal`).size > 0).toBe(false); // all of it is in the main file
  const fd = fs.openSync(file, 'r+');
  try {
    fs.writeSync(fd, Buffer.alloc(pageSize, 0x5a), 0, pageSize, (root - 1) * pageSize);
  } finally {
    fs.closeSync(fd);
  }
}

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(path.join(dir, 'app.db'), ['issues']);
  target = path.join(dir, 'cache.db');
  await sync(src, target);
  write(src, "UPDATE issues SET state = 'closed' WHERE number = 1");
  damage(target, 'issues');
});
afterAll(() => removeDir(dir));

function expectDamaged(r: { status: number | null; stdout: string; stderr: string }, file = target): void {
  expect(r.status, r.stderr).toBe(1);
  expectOneLineError(r, 'TARGET_CORRUPT');
  expect(r.stderr).toContain(file);
  expect(r.stderr).toContain('the file is damaged (SQLITE_CORRUPT)');
  expect(r.stderr).toContain('Restore it from a backup');
  expect(r.stderr).toContain('delete it and run sync again');
}

describe('a damaged target file', () => {
  test('sync fails with TARGET_CORRUPT naming the target and the fix, exit 1, and the source is untouched', async () => {
    const before = sha256(src);
    expectDamaged(await runCliAsync(['sync', src, target]));
    expect(sha256(src)).toBe(before);
  });

  test('health, after the sync that met the damage, fails with the same line, exit 1', async () => {
    expectDamaged(await runCliAsync(['health', target]));
  });

  test('deleted and synced again, it is rebuilt equal to the source', async () => {
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${target}${suffix}`, { force: true });
    const r = await runCliAsync(['sync', src, target]);
    expect(r.status, r.stderr).toBe(0);
    expect(dumpTables(target, ['issues'])).toEqual(dumpTables(src, ['issues']));
  });
});

test('a target whose own metadata table is damaged fails sync at its open with the same line, and health too', async () => {
  const other = path.join(dir, 'meta-cache.db');
  await sync(src, other);
  damage(other, '_sluice_projections');
  const before = sha256(src);
  expectDamaged(await runCliAsync(['sync', src, other]), other);
  expectDamaged(await runCliAsync(['health', other]), other);
  expect(sha256(src)).toBe(before);
});
