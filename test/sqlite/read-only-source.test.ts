// sync from a source it may not write says what access it needs and leaves the target intact
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeUnwritable } from '../support/unwritable.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  expectOneLineError,
  sha256,
  dumpTables,
  write,
} from '../cli/support/cli.ts';

/*
 * sync writes to its source (it re-arms capture triggers that were dropped
 * or altered, and records each target's position), and SQLite keeps the
 * source's -wal and -shm in its folder. A source file or folder this user
 * may not write is refused before anything is opened or made: DB_NOT_WRITABLE,
 * exit 1, naming the file or folder and the access needed, and the target
 * is as it was. Reading needs no write access to the file: changes still
 * works. A folder SQLite cannot make the -shm in is named as such by a
 * reader too.
 *
 * File modes do not stop root: as root, the file or folder is made
 * immutable with chattr +i instead, and without chattr the test is skipped
 * with the reason printed.
 */

let dir: string;
let srcDir: string;
let src: string;
let target: string;

beforeAll(async () => {
  dir = makeDir();
  srcDir = path.join(dir, 'source');
  fs.mkdirSync(srcDir);
  src = trackerSource(path.join(srcDir, 'app.db'), ['issues']);
  target = path.join(dir, 'cache.db');
  await sync(src, target);
  write(src, "UPDATE issues SET state = 'closed' WHERE number = 1"); // something the refused sync would apply
});
afterAll(() => removeDir(dir));

describe('sync from a source it may not write', () => {
  test('a read-only source file: exit 1 with DB_NOT_WRITABLE naming the file and why, the target unchanged, and changes still reads it', async ({
    skip,
  }) => {
    const made = makeUnwritable(src);
    if ('reason' in made) {
      console.warn(`skipped: ${made.reason}`);
      skip();
      return;
    }
    const before = { bytes: sha256(target), rows: dumpTables(target) };
    try {
      const r = await runCliAsync(['sync', src, target, '--json']);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'DB_NOT_WRITABLE');
      expect(r.stderr).toContain(src);
      expect(r.stderr).toContain('re-arms capture triggers');
      expect(r.stderr).toContain('write access');
      expect(parseJson(r, S.errorOutput).error.code).toBe('DB_NOT_WRITABLE');
      const read = await runCliAsync(['changes', src]);
      expect(read.status, read.stderr).toBe(0);
    } finally {
      made.undo();
    }
    expect(sha256(target)).toBe(before.bytes);
    expect(dumpTables(target)).toEqual(before.rows);
  });

  // Folder modes mean nothing on Windows.
  test.skipIf(process.platform === 'win32')(
    'a source folder it may not write: sync and a reader both name the folder and the -wal/-shm files SQLite makes there',
    async ({ skip }) => {
      // The last connection to close removes the -wal and -shm (a reader of an unwritable file above could not).
      write(src, 'SELECT 1');
      expect(fs.readdirSync(srcDir)).toEqual(['app.db']);
      const made = makeUnwritable(srcDir);
      if ('reason' in made) {
        console.warn(`skipped: ${made.reason}`);
        skip();
        return;
      }
      const before = sha256(target);
      try {
        const [r, read] = await Promise.all([runCliAsync(['sync', src, target]), runCliAsync(['status', src])]);
        expect(r.status, r.stderr).toBe(1);
        expectOneLineError(r, 'DB_NOT_WRITABLE');
        expect(r.stderr).toContain(`its folder ${srcDir}`);
        expect(r.stderr).toContain('-wal and -shm');
        // No connection keeps the -shm there, so even a reader cannot open the WAL-mode source.
        expect(read.status, read.stderr).toBe(1);
        expectOneLineError(read, 'DB_NOT_WRITABLE');
        expect(read.stderr).toContain(srcDir);
        expect(read.stderr).toContain('app.db-shm');
      } finally {
        made.undo();
      }
      expect(sha256(target)).toBe(before);
      expect(fs.readdirSync(srcDir)).toEqual(['app.db']);
    },
  );
});
