// a strict table with an any column reaches its mirror and map with every value of its own type
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * In a STRICT table a column declared ANY keeps every value as it was
 * written: the text '3' stays text. In an ordinary table, the target's, a
 * column declared ANY has NUMERIC affinity and turns '3' into the integer
 * 3. So a target column (and the work tables a batch passes through) made
 * with the source's declared type ANY would change the values it copies,
 * and the copy would not be the source's. It is made with no type (no
 * affinity): every value keeps its own.
 */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, v ANY) STRICT';

test('a STRICT table with an ANY column reaches its mirror and map by snapshot and by batch with every value of its own type, and verify is ok', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: "INSERT INTO t VALUES (1, '3'), (2, 3), (3, '1.5'), (4, x'00ff'), (5, ' 7 ')" });
  const target = path.join(tmp, 'cache.db');
  const defs = [
    { name: 't', source: 't', kind: 'mirror' as const },
    { name: 'm', source: 't', kind: 'map' as const, columns: { id: 'id', v: 'v' } },
  ];
  await sync(src.file, target, { projections: defs });
  src.db.exec("INSERT INTO t VALUES (6, '42'); UPDATE t SET v = '0010' WHERE id = 2");
  const r = await sync(src.file, target, { projections: defs });
  expect(r.projections.map((p) => [p.name, p.state, p.applied])).toEqual([
    ['t', 'active', 2],
    ['m', 'active', 2],
  ]);
  const want = src.db.prepare('SELECT id, typeof(v), quote(v) FROM t ORDER BY id').raw().all();
  const t = openDatabase(target, { readonly: true });
  try {
    for (const table of ['t', 'm'])
      expect(t.prepare(`SELECT id, typeof(v), quote(v) FROM ${table} ORDER BY id`).raw().all(), table).toEqual(want);
  } finally {
    t.close();
  }
  const v = await verify(src.file, target);
  expect(v.ok, JSON.stringify(v.projections)).toBe(true);
});
