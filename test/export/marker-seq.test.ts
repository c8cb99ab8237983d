// a snapshot's or batch's marker must agree with its lines and its cursor about seq and source, or import refuses it
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, makeDir, removeDir, write, scalar, dumpTables, expectOneLineError } from '../cli/support/cli.ts';

/*
 * An export of a small source: a snapshot at seq 0 (lines 1-4), then two
 * batches of one event each, (0,1] (lines 5-6) and (1,2] (lines 7-8). The
 * importer records a snapshot's or batch's marker seq and cursor as where the
 * target stands, so a marker moved forward (to a later batch's seq and
 * cursor) over lines of an earlier seq would make it skip the batches
 * between and exit 0 with rows missing. Each edit below keeps the section's
 * digest matching (resealed, as a careful hand edit would): the reader must
 * refuse it by the seqs alone, at FILE:LINE, with nothing of it committed.
 */

let dir: string;
let src: string;
let good: string[];
const at = (f: string) => path.join(dir, f);

type Line = Record<string, unknown> & { type?: string; seq: number; cursor?: string };
const parse = (l: string) => JSON.parse(l) as Line;

/** Every snapshot marker's digest made again over its table and row lines. */
function reseal(ls: readonly string[]): string[] {
  const out: string[] = [];
  let h = createHash('sha256');
  for (const l of ls) {
    const j = parse(l);
    if (j.type === 'snapshot') {
      out.push(JSON.stringify({ ...j, digest: h.digest('hex') }));
      h = createHash('sha256');
    } else {
      if (j.type === 'table' || j.type === 'row') h.update(`${l}\n`);
      out.push(l);
    }
  }
  return out;
}

/** `good` with `edit` applied to each line (by 1-based number), resealed, written to `name`. */
function edited(name: string, edit: (line: Line, n: number) => Line): string {
  const file = at(name);
  fs.writeFileSync(file, `${reseal(good.map((l, i) => JSON.stringify(edit(parse(l), i + 1)))).join('\n')}\n`);
  return file;
}

/** The rows of table `a` a target holds (none when import made no table). */
function targetRows(tgt: string): string[] {
  if (!fs.existsSync(tgt)) return [];
  if (scalar(tgt, "SELECT count(*) FROM main.sqlite_schema WHERE name = 'a'") === 0n) return [];
  return dumpTables(tgt, ['a']).a ?? [];
}

async function expectRefusedAt(file: string, line: number, tgt: string): Promise<string> {
  const r = await runCliAsync(['import', tgt, file]);
  expect(r.status, r.stderr).toBe(1);
  expectOneLineError(r, 'IMPORT_OUT_OF_ORDER');
  expect(r.stderr).toContain(`${file}:${line}:`);
  return r.stderr;
}

beforeAll(async () => {
  dir = makeDir();
  src = at('src.db');
  openDatabase(src, { create: true }).close();
  write(src, "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO a VALUES (1, 'x'), (2, 'y');");
  const en = await runCliAsync(['enable', src, 'a']);
  expect(en.status, en.stderr).toBe(0);
  const out = at('e.jsonl');
  for (const sql of ['', "INSERT INTO a VALUES (3, 'z')", "INSERT INTO a VALUES (4, 'w')"]) {
    if (sql !== '') write(src, sql);
    const r = await runCliAsync(['export', src, '--out', out]);
    expect(r.status, r.stderr).toBe(0);
  }
  good = fs.readFileSync(out, 'utf8').trimEnd().split('\n');
  expect(good.map((l) => parse(l).type ?? 'event')).toEqual(['table', 'row', 'row', 'snapshot', 'event', 'batch', 'event', 'batch']);
  expect(good.map((l) => parse(l).seq)).toEqual([0, 0, 0, 0, 1, 1, 2, 2]);
});
afterAll(() => removeDir(dir));

describe('import checks the seq markers claim', () => {
  test('the unedited file imports to exactly the source', async () => {
    const tgt = at('good.db');
    const r = await runCliAsync(['import', tgt, at('e.jsonl')]);
    expect(r.status, r.stderr).toBe(0);
    expect(targetRows(tgt)).toEqual(dumpTables(src, ['a']).a);
    expect(targetRows(tgt)).toHaveLength(4);
  });

  test("a snapshot marker moved to a later batch's seq and cursor, over rows of seq 0: refused at the marker, nothing committed", async () => {
    const b1 = parse(good[5] as string);
    const file = edited('marker-later.jsonl', (l, n) => (n === 4 ? { ...l, seq: b1.seq, cursor: b1.cursor } : l));
    const tgt = at('marker-later.db');
    const err = await expectRefusedAt(file, 4, tgt);
    expect(err).toContain('a snapshot line at seq 1 ending a snapshot whose table and row lines are at seq 0');
    expect(targetRows(tgt)).toEqual([]);
  });

  test("a snapshot marker whose cursor alone is a later batch's: refused at the marker, nothing committed", async () => {
    const b1 = parse(good[5] as string);
    const file = edited('cursor-later.jsonl', (l, n) => (n === 4 ? { ...l, cursor: b1.cursor } : l));
    const tgt = at('cursor-later.db');
    const err = await expectRefusedAt(file, 4, tgt);
    expect(err).toContain('whose cursor is at seq 1');
    expect(targetRows(tgt)).toEqual([]);
  });

  test('a row line at another seq than its table line: refused at the row line, nothing committed', async () => {
    const file = edited('row-seq.jsonl', (l, n) => (n === 3 ? { ...l, seq: 1 } : l));
    const tgt = at('row-seq.db');
    const err = await expectRefusedAt(file, 3, tgt);
    expect(err).toContain('a row line of a at seq 1 in a snapshot whose table lines are at seq 0');
    expect(targetRows(tgt)).toEqual([]);
  });

  test('table and row lines moved to seq 1 under a marker at seq 0: refused at the marker, nothing committed', async () => {
    const file = edited('lines-later.jsonl', (l, n) => (n <= 3 ? { ...l, seq: 1 } : l));
    const tgt = at('lines-later.db');
    await expectRefusedAt(file, 4, tgt);
    expect(targetRows(tgt)).toEqual([]);
  });

  test("a batch marker whose cursor is the next batch's: refused at it, the snapshot before it stays committed", async () => {
    const b2 = parse(good[7] as string);
    const file = edited('batch-cursor.jsonl', (l, n) => (n === 6 ? { ...l, cursor: b2.cursor } : l));
    const tgt = at('batch-cursor.db');
    const err = await expectRefusedAt(file, 6, tgt);
    expect(err).toContain('a batch line at seq 1 of source');
    expect(scalar(tgt, 'SELECT group_concat(id) FROM (SELECT id FROM a ORDER BY id)')).toBe('1,2');
  });
});
