import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import type { ProjectionDefinitionInput } from '../../../../src/projection/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { verify } from '../../../../src/apply/check/index.ts';
import { cli, exportBothFormats, fileTableCells, makeSource, tableCells } from '../../../apply/support/target.ts';

/*
 * Two declarations a copy of a source column must keep as the source means
 * them, or the incremental path and the first build disagree:
 * - ANY in an ordinary (not STRICT) table is a type name like any other:
 *   NUMERIC affinity, so `v = '5'` is true of the 5 stored from '5'. Work
 *   tables and targets that dropped it (right for a STRICT table only) made
 *   a map's filter and computed columns false for every row applied after
 *   the first build (sync, health exit 0), and verify then blamed a hand edit.
 * - A key declared INTEGER that is not the source's rowid alias (`INTEGER
 *   PRIMARY KEY DESC`, or a WITHOUT ROWID table's key under a map) can hold
 *   1.5 or 'abc'; a target table keyed `PRIMARY KEY (k)` made it its rowid
 *   alias, and every sync after such a key failed with SQLITE_MISMATCH.
 */

const SCHEMA = `
  CREATE TABLE a (k INTEGER PRIMARY KEY, v ANY, w ANY);
  CREATE TABLE s (k INTEGER PRIMARY KEY, v ANY) STRICT;
  CREATE TABLE d (k INTEGER PRIMARY KEY DESC, v);
  CREATE TABLE r (k INTEGER PRIMARY KEY, v) WITHOUT ROWID;
  CREATE TABLE plain (k INTEGER PRIMARY KEY, v);`;
const FIRST = `
  INSERT INTO a VALUES (1, '5', 'x'), (2, 7, '1.5');
  INSERT INTO s VALUES (1, '5'), (2, 5);
  INSERT INTO d VALUES (3, 'three');
  INSERT INTO r VALUES (3, 'three');
  INSERT INTO plain VALUES (3, 'three');`;
const LATER = `
  INSERT INTO a VALUES (3, '5', '2'), (4, 5.0, 'y');
  UPDATE a SET v = '5' WHERE k = 2;
  INSERT INTO s VALUES (3, '5'), (4, 5);
  INSERT INTO d VALUES (1.5, 'one and a half'), ('abc', 'text'), (x'01', 'blob'), (4, 'four');
  INSERT INTO r VALUES (2.5, 'two and a half'), ('def', 'text');
  UPDATE d SET v = 'THREE' WHERE k = 3;
  INSERT INTO plain VALUES (4, 'four');`;

const DEFINITIONS: ProjectionDefinitionInput[] = [
  { name: 'a', source: 'a', kind: 'mirror' },
  { name: 'a5', source: 'a', kind: 'map', columns: { k: 'k', v: 'v', five: { expr: "v = '5'" } }, filter: "v = '5'" },
  { name: 's', source: 's', kind: 'mirror' },
  { name: 's5', source: 's', kind: 'map', columns: { k: 'k', v: 'v', five: { expr: "v = '5'" } }, filter: "v = '5'" },
  { name: 'd', source: 'd', kind: 'mirror' },
  { name: 'r_map', source: 'r', kind: 'map', columns: { k: 'k', v: 'v' } },
  { name: 'plain', source: 'plain', kind: 'mirror' },
];

/** What `sql` selects from the source, cell by cell (storage class and bytes). */
function sourceCells(file: string, sql: string) {
  const db = openDatabase(file, { readonly: true });
  try {
    db.exec(`CREATE TEMP VIEW x AS ${sql}`);
    return tableCells(db, 'temp', 'x');
  } finally {
    db.close();
  }
}

function expectExact(src: string, tgt: string): void {
  expect(fileTableCells(tgt, 'a')).toEqual(sourceCells(src, 'SELECT k, v, w FROM a'));
  expect(fileTableCells(tgt, 'a5')).toEqual(sourceCells(src, "SELECT k, v, v = '5' AS five FROM a WHERE v = '5'"));
  expect(fileTableCells(tgt, 's')).toEqual(sourceCells(src, 'SELECT k, v FROM s'));
  expect(fileTableCells(tgt, 's5')).toEqual(sourceCells(src, "SELECT k, v, v = '5' AS five FROM s WHERE v = '5'"));
  expect(fileTableCells(tgt, 'd')).toEqual(sourceCells(src, 'SELECT k, v FROM d'));
  expect(fileTableCells(tgt, 'r_map')).toEqual(sourceCells(src, 'SELECT k, v FROM r'));
  expect(fileTableCells(tgt, 'plain')).toEqual(sourceCells(src, 'SELECT k, v FROM plain'));
}

describe("a copy keeps what the source's declarations mean", () => {
  test('ANY in an ordinary table, and INTEGER keys that are no rowid alias: first build, applied events and verify agree with the source', async ({
    tmp,
    makeDb,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['a', 's', 'd', 'r', 'plain'], { seed: FIRST });
    const tgt = path.join(tmp, 'target.db');
    const first = await sync(src.file, tgt, { projections: DEFINITIONS, acknowledge: false });
    expect(first.projections.map((p) => [p.name, p.state])).toEqual(DEFINITIONS.map((d) => [d.name, 'active']));
    src.db.exec(LATER);
    const later = await sync(src.file, tgt, { projections: DEFINITIONS, acknowledge: false });
    expect(later.projections.map((p) => [p.name, p.state, (p.applied ?? 0) > 0])).toEqual(DEFINITIONS.map((d) => [d.name, 'active', true]));
    expectExact(src.file, tgt);
    // The rows the map's filter keeps: 1, 2 and 3 (stored 5 from '5'), and 4 (5.0 stored as 5).
    expect(fileTableCells(tgt, 'a5').map((r) => r[0])).toEqual(
      sourceCells(src.file, 'SELECT k FROM a WHERE k IN (1, 2, 3, 4)').map((r) => r[0]),
    );
    // In a STRICT table ANY keeps '5' as text and 5 as an integer, and compares them as they are: the text rows pass.
    expect(fileTableCells(tgt, 's5').map((r) => r[0])).toEqual(sourceCells(src.file, 'SELECT k FROM s WHERE k IN (1, 3)').map((r) => r[0]));
    const checked = await verify(src.file, tgt);
    expect(checked.projections.map((p) => [p.name, p.ok]).sort()).toEqual(DEFINITIONS.map((d) => [d.name, true]).sort());
    // A key that is the source's rowid alias stays the target's (its rows are found by rowid).
    const db = openDatabase(tgt, { readonly: true });
    try {
      const sql = (t: string) => db.prepare('SELECT sql FROM sqlite_schema WHERE name = ?').pluck().get(t) as string;
      expect(sql('plain')).toContain('PRIMARY KEY ("k")');
      expect(sql('d')).toContain('"k" INTEGER PRIMARY KEY DESC');
      expect(sql('a')).toContain('"v" ANY');
      expect(sql('s')).not.toContain('ANY');
    } finally {
      db.close();
    }
  });

  test('an export of them (JSONL and segments), imported into other targets, comes out the same', async ({ tmp, makeDb }) => {
    const src = makeSource(makeDb, SCHEMA, ['a', 's', 'd', 'r', 'plain'], { seed: FIRST });
    const file = path.join(tmp, 'changes.jsonl');
    const segs = path.join(tmp, 'segments');
    exportBothFormats(src.file, file, segs);
    src.db.exec(LATER);
    exportBothFormats(src.file, file, segs);
    const defs = path.join(tmp, 'defs');
    fs.mkdirSync(defs);
    const projections = DEFINITIONS.map((d) => {
      const f = path.join(defs, `${d.name}.json`);
      fs.writeFileSync(f, JSON.stringify(d));
      return f;
    });
    for (const [name, from] of [
      ['imported.db', file],
      ['segments.db', segs],
    ] as const) {
      const tgt = path.join(tmp, name);
      const r = cli(['import', tgt, from, ...projections.flatMap((f) => ['--projection', f])]);
      expect(r.status, r.stderr).toBe(0);
      expectExact(src.file, tgt);
    }
  });
});
