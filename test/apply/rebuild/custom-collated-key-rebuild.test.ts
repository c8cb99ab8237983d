import { test, expect } from '../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource } from '../support/target.ts';
import { counter } from '../support/counter-handler.ts';

/*
 * A source whose primary key compares a column with another collation than
 * the column's own (id COLLATE NOCASE, PRIMARY KEY (id COLLATE BINARY)) may
 * hold 'k000005' and 'K000005' both. A mirror, map or fts5 index of it is
 * refused (two source rows could be one target row), and that refusal
 * points to a custom projection. A protected rebuild of one stages a copy of
 * the source rows in a mirror, which cannot hold them either: the rebuild
 * is made in one transaction instead (as for a handler that declares no
 * tables), never failing on every run with a raw PRIMARY KEY error while
 * the old projection falls behind.
 */

const ROWS = BUILD_CHUNK + 500;
const SCHEMA = 'CREATE TABLE t (id TEXT COLLATE NOCASE, body TEXT NOT NULL, n INTEGER, PRIMARY KEY (id COLLATE BINARY))';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT printf('k%06d', i), 'word row' || i, i % 7 FROM c; INSERT INTO t VALUES ('K000005', 'upper', 3)`;

const def = (v: string): ProjectionDefinition => ({ name: 'p', source: 't', kind: 'custom', tables: ['counts'], handler: counter(v) });
const counts = (db: Db) => db.prepare('SELECT n, c, ver FROM counts WHERE c <> 0 ORDER BY n').all();

test('a custom projection whose source key collates unlike its column is rebuilt in one transaction, not refused by its staged copy', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = `${tmp}/cache.db`;
  await sync(src.file, target, { projections: [def('1')] });
  src.db.exec("INSERT INTO t VALUES ('K000006', 'upper', 4); UPDATE t SET n = 5 WHERE id = 'k000006'");
  const report = await sync(src.file, target, { projections: [def('2')] });
  expect(report.projections[0]?.error).toBeUndefined();
  expect(report.projections[0]).toMatchObject({ name: 'p', state: 'active', rebuilt: 'DEFINITION_CHANGED' });
  expect(report.projections[0]?.swapped).toBeUndefined();
  const fresh = `${tmp}/fresh.db`;
  await sync(src.file, fresh, { projections: [def('2')] });
  const a = openDatabase(target, { readonly: true });
  const b = openDatabase(fresh, { readonly: true });
  expect(counts(a)).toEqual(counts(b));
  expect(a.prepare("SELECT name FROM sqlite_schema WHERE name LIKE '\\_sluice\\_build\\_%' ESCAPE '\\'").all()).toEqual([]);
  a.close();
  b.close();
  // And it goes on from there.
  src.db.exec("DELETE FROM t WHERE id = 'K000005' COLLATE BINARY");
  expect((await sync(src.file, target, { projections: [def('2')] })).projections[0]?.error).toBeUndefined();
  const after = openDatabase(target, { readonly: true });
  expect(Number(after.prepare('SELECT sum(c) FROM counts').pluck().get())).toBe(ROWS + 1);
  after.close();
});
