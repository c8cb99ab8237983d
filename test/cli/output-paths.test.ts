// every path a command writes (export, strip and init --out, a new target, demo --dir) given as a folder, in a folder that does not exist, through a file, or empty: one line naming the path and the fix
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { runCliAsync, mapLimit, makeDir, removeDir, trackerSource, expectOneLineError, exportByLibrary } from './support/cli.ts';

/*
 * The path a command writes to, given wrong: export (JSONL) to a folder
 * (--format segment forgotten), export or strip into a folder that does not
 * exist (a typo), or an empty --out (an unset variable). These printed
 * Node's or SQLite's bare error ("EISDIR: illegal operation on a directory,
 * read", which names no path; "ENOENT: ...", "SQLITE_CANTOPEN: ..."). Each
 * is now one line naming the path and what to do, exit 1 (2 for the empty
 * value, a usage error), and no file or folder is made.
 *
 * So is a path ending in "/" where a file is written (init --out conf/ gave
 * a raw EISDIR; strip --out newdir/ wrote its whole copy to a file ./newdir
 * and then failed with ENOTDIR; sync SRC newdir/ left an empty ./newdir),
 * and one through a file (notes.txt/x.jsonl: raw ENOTDIR), for every
 * command that writes a file the user names: one check
 * (sqlite/output-path.ts), before any work.
 */

let dir: string;
let src: string;
let jsonl: string;
let links = false;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  fs.mkdirSync(at('segments'));
  fs.mkdirSync(at('conf'));
  fs.writeFileSync(at('notes.txt'), 'hi\n');
  jsonl = at('changes.jsonl');
  exportByLibrary(src, jsonl);
  // Links into a folder that does not exist (where a user may not make one, Windows without the right, they are left out).
  try {
    fs.symlinkSync(at('gone/out.db'), at('link.db'));
    fs.symlinkSync(at('gone/e.jsonl'), at('link.jsonl'));
    links = true;
  } catch {
    links = false;
  }
});
afterAll(() => removeDir(dir));

interface Case {
  readonly args: () => string[];
  readonly status: number;
  readonly code?: string;
  readonly says: readonly string[];
}

/** Built once the folder is made: the messages name its paths. */
function cases(): Record<string, Case> {
  return {
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
    'init to an empty --out': { args: () => ['init', src, '--out', ''], status: 2, says: ['--out', '""'] },
    ...endingInSlash(),
    ...(links ? throughALink() : {}),
    ...throughAFile(),
    'a new sync target in a folder that does not exist': {
      args: () => ['sync', src, at('nope/cache.db')],
      status: 1,
      code: 'OUTPUT_FOLDER_MISSING',
      says: [`the folder ${at('nope')} of ${at('nope/cache.db')} does not exist`, 'mkdir -p'],
    },
  };
}

/** A path ending in "/" where a file is written: BAD_PATH, naming it and a file's path in it to pass instead. */
function endingInSlash(): Record<string, Case> {
  const conf = `${at('conf')}/`;
  const fresh = `${at('newdir')}/`;
  const c = (args: () => string[], given: () => string, eg: string): Case => ({
    args,
    status: 1,
    code: 'BAD_PATH',
    says: [`${given()} ends in "/", so it names a folder`, `e.g. ${eg}`],
  });
  return {
    'init --out an existing folder/': c(
      () => ['init', src, '--out', conf],
      () => conf,
      `--out ${path.join(conf, 'sluice.yml')}`,
    ),
    'strip --out a new folder/': c(
      () => ['strip', src, '--out', fresh],
      () => fresh,
      `--out ${path.join(fresh, 'copy.db')}`,
    ),
    'export --out a new folder/': c(
      () => ['export', src, '--out', fresh],
      () => fresh,
      `--out ${path.join(fresh, 'changes.jsonl')}`,
    ),
    'sync to a new target folder/': c(
      () => ['sync', src, fresh],
      () => fresh,
      path.join(fresh, 'target.db'),
    ),
    'import into a new target folder/': c(
      () => ['import', fresh, jsonl],
      () => fresh,
      path.join(fresh, 'target.db'),
    ),
  };
}

/** A link (written through) into a folder that does not exist: OUTPUT_FOLDER_MISSING naming the link and where it leads (SQLite's bare SQLITE_CANTOPEN, Node's bare ENOENT). */
function throughALink(): Record<string, Case> {
  const c = (args: () => string[], link: string, to: string): Case => ({
    args,
    status: 1,
    code: 'OUTPUT_FOLDER_MISSING',
    says: [`the folder ${at('gone')} of ${at(link)} (a link to ${at(to)}) does not exist`],
  });
  return {
    'strip --out a link into a folder that does not exist': c(() => ['strip', src, '--out', at('link.db')], 'link.db', 'gone/out.db'),
    'export --out a link into a folder that does not exist': c(
      () => ['export', src, '--out', at('link.jsonl')],
      'link.jsonl',
      'gone/e.jsonl',
    ),
  };
}

/** A path through a file (notes.txt/x): OUTPUT_FOLDER_MISSING, naming the file that is no folder. */
function throughAFile(): Record<string, Case> {
  const under = (f: string) => path.join(at('notes.txt'), f);
  const c = (args: () => string[]): Case => ({
    args,
    status: 1,
    code: 'OUTPUT_FOLDER_MISSING',
    says: [`goes through ${at('notes.txt')}, which is a file, not a folder`],
  });
  return {
    'init --out through a file': c(() => ['init', src, '--out', under('sluice.yml')]),
    'strip --out through a file': c(() => ['strip', src, '--out', under('copy.db')]),
    'export --out through a file': c(() => ['export', src, '--out', under('x.jsonl')]),
    'export --format segment --out through a file': c(() => ['export', src, '--format', 'segment', '--out', under('segs')]),
    'sync to a target through a file': c(() => ['sync', src, under('cache.db')]),
    'import into a target through a file': c(() => ['import', under('cache.db'), jsonl]),
    'demo --dir through a file': c(() => ['demo', '--dir', under('demo')]),
  };
}

describe('an output path given wrong', () => {
  test('is one line naming the path and the fix; nothing is made', async () => {
    // (The source's -wal and -shm aside: SQLite makes them to read a file in WAL mode.)
    const made = () =>
      fs
        .readdirSync(dir)
        .filter((f) => !/-(wal|shm)$/.test(f))
        .sort();
    const before = made();
    const results = await mapLimit(Object.entries(cases()), 4, async ([name, c]) => ({ name, c, r: await runCliAsync(c.args()) }));
    for (const { name, c, r } of results) {
      expect(r.status, `${name}: ${r.stderr}`).toBe(c.status);
      if (c.code !== undefined) expectOneLineError(r, c.code);
      else expect(r.stderr, name).toMatch(/^error: option '--out <[a-z]+>' argument '' is invalid/);
      for (const s of c.says) expect(r.stderr, name).toContain(s);
    }
    expect(made()).toEqual(before);
    expect(fs.readdirSync(at('segments'))).toEqual([]);
    expect(fs.readdirSync(at('conf'))).toEqual([]);
    expect(fs.readFileSync(at('notes.txt'), 'utf8')).toBe('hi\n');
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
