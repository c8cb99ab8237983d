// a resumed export given another --table set than its cursor carries is refused, nothing written
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { exportOnce, exportSegment, LineSink } from '../../src/export/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, makeDir, removeDir, write, scalar, sha256, expectOneLineError } from '../cli/support/cli.ts';

/*
 * A resumed export (FILE.cursor, DIR.cursor, or --since) writes no snapshot
 * and reads the batches of its cursor's tables: a --table it was given
 * reached only a snapshot, so `export --table a` then `export --table a
 * --table b` exited 0 having written nothing of b. Now a --table set other
 * than the cursor's is refused (EXPORT_TABLES_CHANGED, exit 1) before
 * anything is written, naming the tables and both fixes; the same set (in
 * any order or case) and no --table resume as before.
 */

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = at('src.db');
  openDatabase(src, { create: true }).close();
  write(
    src,
    "CREATE TABLE a (id INTEGER PRIMARY KEY, v); CREATE TABLE b (id INTEGER PRIMARY KEY, v); INSERT INTO a VALUES (1, 'a1'); INSERT INTO b VALUES (1, 'b1');",
  );
  const r = await runCliAsync(['enable', src, 'a', 'b']);
  expect(r.status, r.stderr).toBe(0);
});
afterAll(() => removeDir(dir));

/** The names and bytes of what `paths` hold (files, or a folder's files), to see that nothing was written. */
function contents(...paths: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of paths) {
    if (!fs.existsSync(p)) continue;
    if (fs.statSync(p).isDirectory()) for (const f of fs.readdirSync(p).sort()) out[path.join(p, f)] = sha256(path.join(p, f));
    else out[p] = sha256(p);
  }
  return out;
}

async function expectRefused(args: string[], cursorHolder: string, added: string): Promise<void> {
  const r = await runCliAsync(['export', src, ...args]);
  expect(r.status, r.stderr).toBe(1);
  expectOneLineError(r, 'EXPORT_TABLES_CHANGED');
  expect(r.stderr).toContain(cursorHolder);
  expect(r.stderr).toContain(`${added} would not be exported`);
  expect(r.stderr).toContain('Export to a new --out');
  expect(r.stderr).toContain('or resume with --table a (or no --table)');
}

describe.each(['jsonl', 'segment'] as const)('export --format %s resumed', (format) => {
  test('with --table a --table b after --table a: refused, nothing written; with the same set, or none, it goes on', async () => {
    const out = at(format === 'jsonl' ? 'e.jsonl' : 'segs');
    const cursorFile = `${out}.cursor`;
    const run = (...more: string[]) => runCliAsync(['export', src, '--out', out, '--format', format, ...more]);
    const first = await run('--table', 'a');
    expect(first.status, first.stderr).toBe(0);
    const id = format === 'jsonl' ? 10 : 20; // rows of this run's own
    write(src, `INSERT INTO a VALUES (${id}, 'a'); INSERT INTO b VALUES (${id}, 'b');`);

    const before = contents(out, cursorFile);
    await expectRefused(['--out', out, '--format', format, '--table', 'a', '--table', 'b'], cursorFile, 'b');
    expect(contents(out, cursorFile)).toEqual(before);
    // A set without a: refused too, saying a would still be exported.
    const r = await run('--table', 'b');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('a would still be exported');
    expect(contents(out, cursorFile)).toEqual(before);

    // --since a cursor of a alone, into a new --out: refused, and the new --out is not made.
    const cursor = fs.readFileSync(cursorFile, 'utf8').trim();
    const fresh = at(format === 'jsonl' ? 'since.jsonl' : 'since-segs');
    await expectRefused(['--out', fresh, '--format', format, '--since', cursor, '--table', 'b', '--table', 'a'], 'the --since cursor', 'b');
    expect(fs.existsSync(fresh)).toBe(false);

    // The same set (the name in another case) resumes, and writes a's new event.
    const same = await run('--table', 'A', '--json');
    expect(same.status, same.stderr).toBe(0);
    expect(JSON.parse(same.stdout)).toMatchObject({ rows: 0, events: 1, batches: 1 });
    write(src, `INSERT INTO a VALUES (${id + 1}, 'a')`);
    const none = await run('--json');
    expect(none.status, none.stderr).toBe(0);
    expect(JSON.parse(none.stdout)).toMatchObject({ rows: 0, events: 1, batches: 1 });

    // The fix the message gives: a new --out starts with a snapshot of both tables.
    const both = await runCliAsync([
      'export',
      src,
      '--out',
      at(`both-${format}`),
      '--format',
      format,
      '--table',
      'a',
      '--table',
      'b',
      '--json',
    ]);
    expect(both.status, both.stderr).toBe(0);
    expect(JSON.parse(both.stdout)).toMatchObject({
      rows: Number(scalar(src, 'SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b)')),
    });
  });
});

describe('the library', () => {
  test('exportOnce and exportSegment given a cursor and other tables refuse before writing', () => {
    const db = openDatabase(src, { readonly: true });
    const out = at('lib.jsonl');
    const fd = fs.openSync(out, 'w');
    try {
      const sink = new LineSink(fd);
      const first = exportOnce(db, sink, { tables: ['a'] }, () => {});
      sink.flush(true);
      const size = fs.statSync(out).size;
      const err = (fn: () => unknown) => {
        try {
          fn();
        } catch (e) {
          return e as { code?: string; message: string };
        }
        throw new Error('not refused');
      };
      const e = err(() => exportOnce(db, sink, { since: first.cursor, tables: ['a', 'b'] }, () => {}));
      expect(e.code).toBe('EXPORT_TABLES_CHANGED');
      expect(e.message).toContain('the cursor it resumes from');
      sink.flush(true);
      expect(fs.statSync(out).size).toBe(size);
      const segs = at('lib-segs');
      expect(err(() => exportSegment(db, segs, { since: first.cursor, tables: ['b'] }, () => {})).code).toBe('EXPORT_TABLES_CHANGED');
      expect(fs.existsSync(segs)).toBe(false);
    } finally {
      fs.closeSync(fd);
      db.close();
    }
  });
});
