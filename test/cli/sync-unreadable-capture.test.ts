// sync from a source whose capture cannot be read (none, or a format this sluice does not know) fails before it makes the target
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, expectOneLineError, write } from './support/cli.ts';

/*
 * A sync to a new target path made the target file (empty) before it read
 * the source's capture, and left it there when the capture could not be
 * read: a file the user never got anything in. The capture is now read
 * first; the error is the same (exit 3, the code, the fix), and no file is
 * made at the target's path, -wal and -shm included.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

function noTarget(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) expect(fs.existsSync(`${file}${suffix}`), `${file}${suffix}`).toBe(false);
}

describe('sync from a source whose capture cannot be read', () => {
  test('a source with no capture: CAPTURE_ABSENT, and no target file', async () => {
    const src = trackerSource(at('plain.db'), []);
    const r = await runCliAsync(['sync', src, at('plain-cache.db')]);
    expect(r.status, r.stderr).toBe(3);
    expectOneLineError(r, 'CAPTURE_ABSENT');
    noTarget(at('plain-cache.db'));
  });
  test('a source with no table at all: CAPTURE_ABSENT says to make one, in a sentence', async () => {
    runSqliteCli(at('empty.db'), 'PRAGMA user_version = 1');
    const r = await runCliAsync(['sync', at('empty.db'), at('empty-cache.db')]);
    expect(r.status, r.stderr).toBe(3);
    expectOneLineError(r, 'CAPTURE_ABSENT');
    expect(r.stderr).toMatch(
      /has no sluice capture\. Make a table in .*empty\.db, then run sluice enable .*empty\.db followed by its name, first\./,
    );
    expect(r.stderr).not.toMatch(/Run make/);
    noTarget(at('empty-cache.db'));
  });
  test('a capture of a format this sluice does not know: CAPTURE_FORMAT_UNKNOWN, and no target file', async () => {
    const src = trackerSource(at('future.db'), ['issues']);
    write(src, 'UPDATE _sluice_state SET format = 99');
    const r = await runCliAsync(['sync', src, at('future-cache.db')]);
    expect(r.status, r.stderr).toBe(3);
    expectOneLineError(r, 'CAPTURE_FORMAT_UNKNOWN');
    noTarget(at('future-cache.db'));
  });
  test('a readable capture still makes the target', async () => {
    const src = trackerSource(at('ok.db'), ['issues']);
    const r = await runCliAsync(['sync', src, at('ok-cache.db')]);
    expect(r.status, r.stderr).toBe(0);
    expect(fs.existsSync(at('ok-cache.db'))).toBe(true);
  });
});
