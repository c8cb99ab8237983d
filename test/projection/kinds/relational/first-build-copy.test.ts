import path from 'node:path';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import type { ProjectionDefinitionInput } from '../../../../src/projection/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { verify } from '../../../../src/apply/check/index.ts';
import { makeSource, tableCells } from '../../../apply/support/target.ts';

/*
 * A first build copies the source rows with one INSERT … SELECT. When the
 * target table takes the source's columns as they are, in order (a mirror,
 * or a map that renames and computes nothing), the copy is `SELECT *`, the
 * shape SQLite copies record by record when both tables agree on types,
 * collations and keys. Whichever way SQLite takes, the target must hold the
 * source's values exactly: the same storage class and bytes in the same
 * column, for every shape below (affinities, a REAL holding whole numbers,
 * NOCASE, no declared type, generated columns, WITHOUT ROWID, STRICT), and
 * for maps whose columns are the source's in another order, a part of them,
 * or all of them under a filter.
 */

const SCHEMA = `
  CREATE TABLE a (id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE, r REAL, anything, b BLOB, n NUMERIC);
  INSERT INTO a VALUES (1, 'Ab', 3, '1', x'00ff', '2.0'), (2, 'ab', 2.5, 7, NULL, 'x'), (3, NULL, -0.0, 1.5, 'text', 10);
  CREATE TABLE g (id INTEGER PRIMARY KEY, x INTEGER, y AS (x * 2) VIRTUAL, z AS (x || '!') STORED);
  INSERT INTO g (id, x) VALUES (1, 4), (2, NULL), (3, 'q');
  CREATE TABLE w (k TEXT PRIMARY KEY, v, u INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
  INSERT INTO w VALUES ('b', 1, 2), ('a', 'x', 3);
  CREATE TABLE s (id INTEGER PRIMARY KEY, v TEXT, n INTEGER, f ANY) STRICT;
  INSERT INTO s VALUES (1, 'one', 1, 1.5), (2, 'two', NULL, x'01');`;
const TABLES = ['a', 'g', 'w', 's'];

const DEFINITIONS: ProjectionDefinitionInput[] = [
  ...TABLES.map((t) => ({ name: t, source: t, kind: 'mirror' as const })),
  {
    name: 'a_same',
    source: 'a',
    kind: 'map',
    target: 'a_same',
    columns: { id: 'id', name: 'name', r: 'r', anything: 'anything', b: 'b', n: 'n' },
  },
  {
    name: 'a_swapped',
    source: 'a',
    kind: 'map',
    target: 'a_swapped',
    columns: { id: 'id', r: 'name', name: 'r', b: 'b', anything: 'anything', n: 'n' },
  },
  {
    name: 'a_filtered',
    source: 'a',
    kind: 'map',
    target: 'a_filtered',
    columns: { id: 'id', name: 'name', r: 'r', anything: 'anything', b: 'b', n: 'n' },
    filter: 'r > 2',
  },
  { name: 's_part', source: 's', kind: 'map', target: 's_part', columns: { id: 'id', n: 'n' } },
  { name: 's_reordered', source: 's', kind: 'map', target: 's_reordered', columns: { f: 'f', n: 'n', v: 'v', id: 'id' } },
];

/** `table`'s cells as read by `columns` in the source, as `expr AS name` pairs. */
function sourceCells(file: string, table: string, columns: readonly [string, string][], where = '') {
  const db = openDatabase(file, { readonly: true });
  try {
    db.exec(
      `CREATE TEMP VIEW v AS SELECT ${columns.map(([expr, name]) => `${expr} AS "${name}"`).join(', ')} FROM main."${table}"${where}`,
    );
    return tableCells(db, 'temp', 'v');
  } finally {
    db.close();
  }
}

function targetCells(file: string, table: string) {
  const db = openDatabase(file, { readonly: true });
  try {
    return tableCells(db, 'main', table);
  } finally {
    db.close();
  }
}

describe("a first build copies the source's values exactly", () => {
  test('mirrors of every shape, and maps in the same order, another order and in part', async ({ tmp, makeDb }) => {
    const src = makeSource(makeDb, SCHEMA, TABLES);
    src.db.close();
    const tgt = path.join(tmp, 'target.db');
    const report = await sync(src.file, tgt, { projections: DEFINITIONS, acknowledge: false });
    expect(report.projections.map((p) => [p.name, p.state])).toEqual(DEFINITIONS.map((d) => [d.name, 'active']));

    const cols = (names: string) => names.split(' ').map((c) => [c, c] as [string, string]);
    expect(targetCells(tgt, 'a')).toEqual(sourceCells(src.file, 'a', cols('id name r anything b n')));
    expect(targetCells(tgt, 'g')).toEqual(sourceCells(src.file, 'g', cols('id x y z')));
    expect(targetCells(tgt, 'w')).toEqual(sourceCells(src.file, 'w', cols('k v u')));
    expect(targetCells(tgt, 's')).toEqual(sourceCells(src.file, 's', cols('id v n f')));
    expect(targetCells(tgt, 'a_same')).toEqual(sourceCells(src.file, 'a', cols('id name r anything b n')));
    expect(targetCells(tgt, 'a_swapped')).toEqual(
      sourceCells(src.file, 'a', [
        ['id', 'id'],
        ['name', 'r'],
        ['r', 'name'],
        ['b', 'b'],
        ['anything', 'anything'],
        ['n', 'n'],
      ]),
    );
    expect(targetCells(tgt, 'a_filtered')).toEqual(sourceCells(src.file, 'a', cols('id name r anything b n'), ' WHERE r > 2'));
    expect(targetCells(tgt, 'a_filtered')).toHaveLength(2);
    expect(targetCells(tgt, 's_part')).toEqual(sourceCells(src.file, 's', cols('id n')));
    expect(targetCells(tgt, 's_reordered')).toEqual(sourceCells(src.file, 's', cols('f n v id')));
    // And verify, which compares through the projection's own expressions, agrees.
    const checked = await verify(src.file, tgt);
    expect(checked.projections.map((p) => [p.name, p.ok]).sort()).toEqual(DEFINITIONS.map((d) => [d.name, true]).sort());
  });
});
