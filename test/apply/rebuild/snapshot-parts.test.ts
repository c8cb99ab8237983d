// a first snapshot read in parts for its progress holds every row whatever the key
import { test, expect } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { sync, type SyncProgress } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource, tableCells } from '../support/target.ts';

/*
 * When progress is shown, a first snapshot is read in key-ordered parts (so
 * that the rows read can be told between them), each part ending on the
 * key its last row has. A part that ends on a TEXT key that is not valid
 * UTF-8 must carry that key exactly, or the next part would start past the
 * rows sorted between it and U+FFFD. The parts' target must be byte for
 * byte the one a snapshot read whole makes, for a mirror, a map and an fts5
 * index (its keys and what it finds), over a rowid table with a text key, a WITHOUT ROWID table with a
 * NOCASE composite key, and an INTEGER PRIMARY KEY table.
 */

const ROWS = BUILD_CHUNK + 500;
/** k000002..: with k000001 left out, the first part's 20,000th row is the malformed key below. */
const seed = (table: string) =>
  `WITH RECURSIVE c(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO ${table} SELECT printf('k%06d', i), 'word row' || i FROM c;
INSERT INTO ${table} VALUES (CAST(x'6b30323030303080' AS TEXT), 'malformed key'), ('k020000é', 'accented key');`;

const SCHEMA = `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE w (a TEXT COLLATE NOCASE, b INTEGER, body TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID;
CREATE TABLE n (id INTEGER PRIMARY KEY, body TEXT);`;

const PROJECTIONS: ProjectionDefinition[] = [
  { name: 't', source: 't', kind: 'mirror' },
  { name: 't_search', source: 't', kind: 'fts5', columns: ['body'], content: 'external' },
  { name: 'w', source: 'w', kind: 'mirror' },
  {
    name: 'w_map',
    source: 'w',
    kind: 'map',
    target: 'w_bodies',
    columns: { a: 'a', b: 'b', body: { expr: 'upper(body)', type: 'TEXT' } },
    filter: 'b < 5',
  },
  { name: 'n', source: 'n', kind: 'mirror' },
];

test('a first snapshot read in parts, with each part reported, makes the target a whole snapshot makes, whatever the key', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t', 'w', 'n'], {
    seed: `${seed('t')}
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO w SELECT CASE i % 3 WHEN 0 THEN 'A' WHEN 1 THEN 'b' ELSE 'C' END || (i / 7), i % 7, 'w' || i FROM c;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO n SELECT i * 3, 'n' || i FROM c;`,
  });
  const reports: SyncProgress[] = [];
  const parts = `${tmp}/parts.db`;
  const whole = `${tmp}/whole.db`;
  const r = await sync(src.file, parts, { projections: PROJECTIONS, onProgress: (e) => reports.push(e) });
  expect(r.projections.map((p) => p.state)).toEqual(PROJECTIONS.map(() => 'active'));
  await sync(src.file, whole, { projections: PROJECTIONS });

  // It was read in parts: each projection reported rows between 0 and its table's count.
  for (const p of PROJECTIONS) {
    const mine = reports.filter((e) => e.projection === p.name && e.phase === 'snapshot' && e.rowsTotal !== undefined);
    const total = mine[0]?.rowsTotal ?? 0;
    expect(total, p.name).toBeGreaterThan(BUILD_CHUNK);
    expect(mine.filter((e) => (e.rows ?? 0) > 0 && (e.rows ?? 0) < total).length, p.name).toBeGreaterThanOrEqual(1);
  }

  const a = openDatabase(parts, { readonly: true });
  const b = openDatabase(whole, { readonly: true });
  try {
    for (const table of ['t', 'w', 'w_bodies', 'n']) expect(tableCells(a, 'main', table), table).toEqual(tableCells(b, 'main', table));
    // The index's keys (the rowids it gives them follow the order rows were read in: key order in parts).
    expect(tableCells(a, 'main', 't_search_src', ['_k0'])).toEqual(tableCells(b, 'main', 't_search_src', ['_k0']));
    const match = (db: typeof a, q: string) => Number(db.prepare('SELECT count(*) FROM t_search WHERE t_search MATCH ?').pluck().get(q));
    expect(match(a, 'word')).toBe(ROWS - 1);
    expect(match(a, 'key')).toBe(match(b, 'key'));
    expect(match(a, 'malformed')).toBe(1);
  } finally {
    a.close();
    b.close();
  }
  const v = await verify(src.file, parts);
  expect(v.ok, JSON.stringify(v.projections.filter((p) => !p.ok))).toBe(true);
});
