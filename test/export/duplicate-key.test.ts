// a snapshot with two rows for one key is refused naming the file, the table and the lines, not with a bare SQLite error
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, makeDir, removeDir, write, scalar, expectOneLineError } from '../cli/support/cli.ts';

/*
 * A source holds one row per key, so a snapshot with two row lines (or two
 * segment rows) for one key was edited; with its counts and digest made to
 * match, only building the target's table finds it, and import failed with
 * a bare `SQLITE_CONSTRAINT_PRIMARYKEY: UNIQUE constraint failed:
 * _sluice_shadow_...` naming neither the file nor the table. Now it is
 * IMPORT_DUPLICATE_KEY, naming the file and table (and a JSONL file's
 * lines), exit 1, with nothing of the snapshot committed.
 */

let dir: string;
let src: string;
let good: string[];
const at = (f: string) => path.join(dir, f);
const U_ROWS = 5001; // one more than the rows the importer adds at once: the copy of u's first row is in another chunk

type Line = Record<string, unknown> & { type?: string; table?: string; row?: Record<string, unknown> };

/** `lines` with the snapshot marker's counts and digest made again over its table and row lines (a careful forger). */
function resealed(lines: readonly string[]): string {
  const h = createHash('sha256');
  const rows: Record<string, number> = {};
  const out = lines.map((l) => {
    const j = JSON.parse(l) as Line;
    if (j.type === 'snapshot') return JSON.stringify({ ...j, rows, digest: h.digest('hex') });
    if (j.type === 'row') rows[j.table as string] = (rows[j.table as string] ?? 0) + 1;
    h.update(`${l}\n`);
    return l;
  });
  return `${out.join('\n')}\n`;
}

/** The user tables a target holds (none when the snapshot was not committed). */
function tablesOf(tgt: string): string[] {
  if (!fs.existsSync(tgt)) return [];
  const names = scalar(
    tgt,
    "SELECT group_concat(name) FROM (SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name IN ('t', 'u') ORDER BY name)",
  );
  return names === null ? [] : String(names).split(',');
}

beforeAll(async () => {
  dir = makeDir();
  src = at('src.db');
  openDatabase(src, { create: true }).close();
  write(
    src,
    `CREATE TABLE t (k TEXT PRIMARY KEY, v); INSERT INTO t VALUES ('x', 'c'), ('y', 'd');
     CREATE TABLE u (id INTEGER PRIMARY KEY, v); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${U_ROWS}) INSERT INTO u SELECT i, 'u' || i FROM n;`,
  );
  const en = await runCliAsync(['enable', src, 't', 'u']);
  expect(en.status, en.stderr).toBe(0);
  const r = await runCliAsync(['export', src, '--out', at('e.jsonl')]);
  expect(r.status, r.stderr).toBe(0);
  good = fs.readFileSync(at('e.jsonl'), 'utf8').trimEnd().split('\n');
});
afterAll(() => removeDir(dir));

async function expectDuplicate(input: string, tgt: string): Promise<string> {
  const r = await runCliAsync(['import', tgt, input]);
  expect(r.status, r.stderr).toBe(1);
  expectOneLineError(r, 'IMPORT_DUPLICATE_KEY');
  expect(r.stderr).not.toContain('SQLITE_');
  expect(r.stderr).not.toContain('_sluice_shadow');
  expect(tablesOf(tgt)).toEqual([]);
  return r.stderr;
}

describe('a snapshot with two rows for one key', () => {
  test('JSONL, the copy right after its row: refused at the copy, naming the line of the first', async () => {
    const i = good.findIndex((l) => l.startsWith('{"type":"row"') && l.includes('"table":"t"') && l.includes('"k":"x"'));
    expect(i).toBeGreaterThan(0);
    const lines = [...good];
    lines.splice(i + 1, 0, (good[i] as string).replace('"c"', '"DUP"'));
    const file = at('dup.jsonl');
    fs.writeFileSync(file, resealed(lines));
    const err = await expectDuplicate(file, at('dup.db'));
    expect(err).toContain(`${file}:${i + 2}: this row line has the value of table t's key (k) the row line at line ${i + 1} has`);
    expect(err).toContain('nothing of the snapshot was committed');
  });

  test('JSONL, the copy thousands of lines after its row: refused naming the lines it is among', async () => {
    const rows = good.flatMap((l, k) => (l.startsWith('{"type":"row"') && l.includes('"table":"u"') ? [k] : []));
    expect(rows).toHaveLength(U_ROWS);
    const last = rows.at(-1) as number;
    const lines = [...good];
    lines.splice(last + 1, 0, (good[rows[0] as number] as string).replace('"u1"', '"DUP"'));
    const file = at('far.jsonl');
    fs.writeFileSync(file, resealed(lines));
    const err = await expectDuplicate(file, at('far.db'));
    expect(err).toContain(
      `${file}:${last + 1}-${last + 2}: a row line among these has the value of table u's key (id) an earlier row line of its snapshot has`,
    );
  });

  test('a segment, a row of segment_rows copied and its digest made again: refused naming the segment and the table', async () => {
    const segs = at('segs');
    const r = await runCliAsync(['export', src, '--out', segs, '--format', 'segment', '--table', 't']);
    expect(r.status, r.stderr).toBe(0);
    const [name] = fs.readdirSync(segs).filter((f) => f.endsWith('.segment'));
    const file = path.join(segs, name as string);
    runPython(
      `import sys, hashlib, sqlite3
f = sys.argv[1]
con = sqlite3.connect(f)
con.execute("INSERT INTO segment_rows_1 SELECT c0, 'DUP' FROM segment_rows_1 WHERE c0 = 'x'")
con.execute("UPDATE segment_tables SET rows = rows + 1 WHERE name = 't'")
con.execute("UPDATE segment SET value = value + 1 WHERE name = 'rows'")
# (As an older sluice's segment, without the frame digest of the meta: the forger need not make that again too.)
con.execute("DELETE FROM segment WHERE name = 'frame'")
con.commit()
ps = con.execute("PRAGMA page_size").fetchone()[0]
skip = {r[0] for r in con.execute("SELECT pageno FROM dbstat WHERE name = 'segment'")}
data = open(f, 'rb').read()
h = hashlib.sha256()
for p in range(2, len(data) // ps + 1):
    if p not in skip: h.update(data[(p - 1) * ps:p * ps])
con.execute("UPDATE segment SET value = ? WHERE name = 'digest'", (h.hexdigest(),))
con.commit()
con.close()`,
      [file],
    );
    for (const input of [file, segs]) {
      const err = await expectDuplicate(input, at(`seg-${path.basename(input)}.db`));
      expect(err).toContain(`Segment ${file}: its snapshot holds two rows with one value of table t's key (k)`);
    }
  });
});
