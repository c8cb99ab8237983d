// a database or output path this user may not write: each command names the file or folder and the access it needs
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeUnwritable } from '../support/unwritable.ts';
import { runCliAsync, mapLimit, makeDir, removeDir, expectOneLineError, syncedAndExported, write } from './support/cli.ts';

/*
 * sluice run as another user than the app's (a service account), or on
 * files a deploy left read-only. sync refuses such a source up front
 * (test/sqlite/read-only-source.test.ts); the other commands that write a
 * database printed SQLite's bare "SQLITE_READONLY: attempt to write a
 * readonly database", and those that write a new file Node's bare "EACCES:
 * permission denied, open 'x'" (strip: "SQLITE_CANTOPEN: unable to open
 * database"). Each is now one line naming the file or folder and the access
 * it needs: DB_NOT_WRITABLE for a database, ACCESS_DENIED for another path.
 *
 * File modes do not stop root: as root, the file or folder is made
 * immutable with chattr +i instead, and without chattr the test is skipped
 * with the reason printed.
 */

let dir: string;
let src: string;
let tgt: string;
let jsonl: string;
let out: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  ({ src, tgt, jsonl } = await syncedAndExported(dir));
  out = at('out');
  fs.mkdirSync(out);
  // The last connection to close removes the -wal and -shm, so a writer must open the file itself.
  write(src, 'SELECT 1');
  write(tgt, 'SELECT 1');
});
afterAll(() => removeDir(dir));

interface Case {
  readonly args: () => string[];
  readonly code: string;
  readonly says: () => string[];
}

async function expectNamed(paths: readonly string[], cases: Record<string, Case>, skip: () => void): Promise<void> {
  const undo: (() => void)[] = [];
  try {
    for (const p of paths) {
      const made = makeUnwritable(p);
      if ('reason' in made) {
        console.warn(`skipped: ${made.reason}`);
        skip();
        return;
      }
      undo.push(made.undo);
    }
    const results = await mapLimit(Object.entries(cases), 4, async ([name, c]) => ({ name, c, r: await runCliAsync(c.args()) }));
    for (const { name, c, r } of results) {
      expect(r.status, `${name}: ${r.stderr}`).toBe(1);
      expect(r.stderr, name).not.toMatch(/SQLITE_READONLY|SQLITE_CANTOPEN|sluice: EACCES|sluice: EPERM/);
      expectOneLineError(r, c.code);
      for (const s of c.says()) expect(r.stderr, name).toContain(s);
      expect(r.stderr, name).toContain('access');
    }
  } finally {
    for (const u of undo) u();
  }
}

describe('a file this user may not write', () => {
  test('the source and the target databases: the commands that write them say DB_NOT_WRITABLE, naming the file', async ({ skip }) => {
    await expectNamed(
      [src, tgt],
      {
        bump: { args: () => ['bump', src, '--reason', 'reload'], code: 'DB_NOT_WRITABLE', says: () => [src] },
        disable: { args: () => ['disable', src, 'labels'], code: 'DB_NOT_WRITABLE', says: () => [src] },
        alter: { args: () => ['alter', src, 'ALTER TABLE labels ADD COLUMN note TEXT'], code: 'DB_NOT_WRITABLE', says: () => [src] },
        query: { args: () => ['query', src, "UPDATE labels SET name = name || '!'"], code: 'DB_NOT_WRITABLE', says: () => [src] },
        drop: { args: () => ['drop', tgt, 'labels'], code: 'DB_NOT_WRITABLE', says: () => [tgt] },
        protect: { args: () => ['protect', tgt], code: 'DB_NOT_WRITABLE', says: () => [tgt] },
        import: { args: () => ['import', tgt, jsonl], code: 'DB_NOT_WRITABLE', says: () => [tgt] },
      },
      skip,
    );
  });

  test('a target it may not write, whose source it may: sync and reinit say DB_NOT_WRITABLE, naming the target', async ({ skip }) => {
    // A change to sync, so that sync writes the target (it printed SQLite's bare SQLITE_READONLY, naming neither file).
    write(src, "UPDATE labels SET name = name || '?' WHERE rowid = (SELECT min(rowid) FROM labels)");
    await expectNamed(
      [tgt],
      {
        sync: { args: () => ['sync', src, tgt], code: 'DB_NOT_WRITABLE', says: () => [`target ${tgt}`] },
        reinit: { args: () => ['reinit', src, tgt, 'labels'], code: 'DB_NOT_WRITABLE', says: () => [`target ${tgt}`] },
      },
      skip,
    );
  });

  test('a folder it may not write: export, init and strip name the path they would make there', async ({ skip }) => {
    await expectNamed(
      [out],
      {
        export: {
          args: () => ['export', src, '--out', path.join(out, 'app.jsonl')],
          code: 'ACCESS_DENIED',
          says: () => [path.join(out, 'app.jsonl')],
        },
        segments: {
          args: () => ['export', src, '--out', path.join(out, 'segments'), '--format', 'segment'],
          code: 'ACCESS_DENIED',
          says: () => [path.join(out, 'segments')],
        },
        init: {
          args: () => ['init', src, '--out', path.join(out, 'sluice.yml')],
          code: 'ACCESS_DENIED',
          says: () => [path.join(out, 'sluice.yml')],
        },
        strip: { args: () => ['strip', src, '--out', path.join(out, 'copy.db')], code: 'DB_NOT_WRITABLE', says: () => [out] },
      },
      skip,
    );
    expect(fs.readdirSync(out)).toEqual([]);
  });

  test("an export's lock file it may not write (another user's export made it): ACCESS_DENIED naming the lock file, not the source", async ({
    skip,
  }) => {
    const file = at('locked.jsonl');
    const first = await runCliAsync(['export', src, '--out', file]);
    expect(first.status, first.stderr).toBe(0);
    expect(fs.existsSync(`${file}.lock`)).toBe(true);
    await expectNamed(
      [`${file}.lock`],
      {
        export: { args: () => ['export', src, '--out', file], code: 'ACCESS_DENIED', says: () => [`${file}.lock`] },
      },
      skip,
    );
  });
});
