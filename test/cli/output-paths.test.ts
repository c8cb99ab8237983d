// export --out and strip --out at a folder, in a folder that does not exist, or empty: one line naming the path and the fix
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { runCliAsync, mapLimit, makeDir, removeDir, trackerSource, expectOneLineError } from './support/cli.ts';

/*
 * The path a command writes to, given wrong: export (JSONL) to a folder
 * (--format segment forgotten), export or strip into a folder that does not
 * exist (a typo), or an empty --out (an unset variable). These printed
 * Node's or SQLite's bare error ("EISDIR: illegal operation on a directory,
 * read", which names no path; "ENOENT: ...", "SQLITE_CANTOPEN: ..."). Each
 * is now one line naming the path and what to do, exit 1 (2 for the empty
 * value, a usage error), and no file or folder is made.
 */

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  fs.mkdirSync(at('segments'));
});
afterAll(() => removeDir(dir));

interface Case {
  readonly args: () => string[];
  readonly status: number;
  readonly code?: string;
  readonly says: readonly string[];
}

const CASES: Record<string, Case> = {
  'export (JSONL) to a folder': {
    args: () => ['export', src, '--out', at('segments')],
    status: 1,
    code: 'BAD_FORMAT',
    says: ['is a folder', '--format segment'],
  },
  'export into a folder that does not exist': {
    args: () => ['export', src, '--out', at('nope/changes.jsonl')],
    status: 1,
    code: 'OUTPUT_FOLDER_MISSING',
    says: ['nope', 'mkdir -p'],
  },
  'strip into a folder that does not exist': {
    args: () => ['strip', src, '--out', at('nope/copy.db')],
    status: 1,
    code: 'OUTPUT_FOLDER_MISSING',
    says: ['nope', 'mkdir -p'],
  },
  'export to an empty --out': { args: () => ['export', src, '--out', ''], status: 2, says: ['--out', '""'] },
  'strip to an empty --out': { args: () => ['strip', src, '--out', ''], status: 2, says: ['--out', '""'] },
};

describe('an output path given wrong', () => {
  test('is one line naming the path and the fix; nothing is made', async () => {
    // (The source's -wal and -shm aside: SQLite makes them to read a file in WAL mode.)
    const made = () =>
      fs
        .readdirSync(dir)
        .filter((f) => !/-(wal|shm)$/.test(f))
        .sort();
    const before = made();
    const results = await mapLimit(Object.entries(CASES), 4, async ([name, c]) => ({ name, c, r: await runCliAsync(c.args()) }));
    for (const { name, c, r } of results) {
      expect(r.status, `${name}: ${r.stderr}`).toBe(c.status);
      if (c.code !== undefined) expectOneLineError(r, c.code);
      else expect(r.stderr, name).toMatch(/^error: option '--out <[a-z]+>' argument '' is invalid/);
      for (const s of c.says) expect(r.stderr, name).toContain(s);
    }
    expect(made()).toEqual(before);
    expect(fs.readdirSync(at('segments'))).toEqual([]);
  });

  test('export of a database without capture (a target given as the source) makes no output file', async () => {
    const plain = trackerSource(at('plain.db'), []);
    const r = await runCliAsync(['export', plain, '--out', at('plain.jsonl')]);
    expect(r.status, r.stderr).toBe(3);
    expectOneLineError(r, 'CAPTURE_ABSENT');
    expect(fs.existsSync(at('plain.jsonl'))).toBe(false);
    expect(fs.existsSync(at('plain.jsonl.cursor'))).toBe(false);
  });
});
