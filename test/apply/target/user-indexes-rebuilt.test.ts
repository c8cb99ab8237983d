// a rebuild makes the indexes a user added to a target again
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import type { Db } from '../../../src/sqlite/index.ts';
import { makeSource, tableCells } from '../support/target.ts';
import { enable } from '../../../src/capture/index.ts';

/*
 * Users add indexes to a cache for their own queries. A rebuild drops and
 * makes a projection's tables again (a changed definition, --reinit, a new
 * generation); it must make those indexes again too, or the user's queries
 * silently slow down, and say which ones it could not.
 */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT, n INTEGER)';
const SEED = "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 20), (3, 'c', 30)";
const MIRROR = { name: 't', source: 't', kind: 'mirror' as const };
const MAP = { name: 'tmap', source: 't', kind: 'map' as const, columns: { id: 'id', email: 'email', n: 'n' } };

function indexes(db: Db, schema: string): [string, string, string][] {
  return (
    db
      .prepare(`SELECT name, tbl_name, sql FROM ${schema}.sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`)
      .raw()
      .all() as [string, string, string][]
  ).map((r) => [...r]);
}

test('indexes a user added to mirror and map tables survive --reinit and a changed definition, with their exact SQL; one that no longer fits is left out and reported', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  let s = await Syncer.open(src.file, target, { projections: [MIRROR, MAP] });
  try {
    await s.runOnce();
    s.session.db.exec(`CREATE INDEX tgt.t_n ON t (n);
      CREATE UNIQUE INDEX tgt."Email Ix" ON t (email COLLATE NOCASE);
      CREATE INDEX tgt.t_big ON t (n) WHERE n > 10;
      CREATE INDEX tgt.tmap_n ON tmap (n DESC, email)`);
    const made = indexes(s.session.db, 'tgt');
    expect(made.map((r) => r[0])).toEqual(['Email Ix', 't_big', 't_n', 'tmap_n']);

    src.db.exec("UPDATE t SET n = 40 WHERE id = 1; INSERT INTO t VALUES (4, 'd', 4)");
    const r = await s.runOnce({ reinit: ['t'] });
    expect(r.projections.map((p) => [p.name, p.state, p.rebuilt, p.droppedIndexes])).toEqual([
      ['t', 'active', 'REINIT', undefined],
      ['tmap', 'active', undefined, undefined],
    ]);
    expect(indexes(s.session.db, 'tgt')).toEqual(made);
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(tableCells(src.db, 'main', 't'));
    // Made in the target, where they were: the source has none of them.
    expect(indexes(src.db, 'main')).toEqual([]);
    // And used there, for the queries they were made for.
    const plan = (
      s.session.db.prepare("EXPLAIN QUERY PLAN SELECT id FROM tgt.t WHERE email = 'B' COLLATE NOCASE").all() as { detail: string }[]
    )
      .map((x) => x.detail)
      .join(' ');
    expect(plan).toMatch(/Email Ix/);
  } finally {
    s.close();
  }

  // The map loses its column n: the rebuild cannot make tmap_n again, and says so.
  s = await Syncer.open(src.file, target, { projections: [MIRROR, { ...MAP, columns: { id: 'id', email: 'email' } }] });
  try {
    const r = await s.runOnce();
    const map = r.projections.find((p) => p.name === 'tmap');
    expect(map).toMatchObject({ state: 'active', rebuilt: 'DEFINITION_CHANGED' });
    expect(map?.droppedIndexes?.map((d) => [d.name, d.table])).toEqual([['tmap_n', 'tmap']]);
    expect(map?.droppedIndexes?.[0]?.why).toMatch(/no such column: n/);
    expect(indexes(s.session.db, 'tgt').map((x) => x[0])).toEqual(['Email Ix', 't_big', 't_n']);
  } finally {
    s.close();
  }
});

test('a UNIQUE index the source breaks: the mirror suspends with TARGET_CONSTRAINT, and --reinit rebuilds it without that index, reporting it, and keeps the others', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const s = await Syncer.open(src.file, path.join(tmp, 'target.db'), { projections: [MIRROR] });
  try {
    await s.runOnce();
    s.session.db.exec('CREATE UNIQUE INDEX tgt.t_email ON t (email); CREATE INDEX tgt.t_n ON t (n)');
    src.db.exec("INSERT INTO t VALUES (5, 'a', 5)");
    expect((await s.runOnce()).projections[0]).toMatchObject({ state: 'suspended', reason: 'TARGET_CONSTRAINT' });
    const r = await s.runOnce({ reinit: ['t'] });
    expect(r.projections[0]).toMatchObject({ state: 'active', rebuilt: 'REINIT', snapshotRows: 4 });
    expect(r.projections[0]?.droppedIndexes?.map((d) => d.name)).toEqual(['t_email']);
    expect(r.projections[0]?.droppedIndexes?.[0]?.why).toMatch(/UNIQUE constraint failed/);
    expect(indexes(s.session.db, 'tgt').map((x) => x[0])).toEqual(['t_n']);
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    s.close();
  }
});

test('an index on an fts5 shadow table is made again after a rebuild; index SQL edited in the target file to hold a second statement is refused, never run against the source', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, `${SCHEMA}; CREATE TABLE secrets (x TEXT); INSERT INTO secrets VALUES ('keep me')`, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  const defs = [MIRROR, { name: 'ts', source: 't', kind: 'fts5' as const, columns: ['email'], content: 'external' as const }];
  let s = await Syncer.open(src.file, target, { projections: defs });
  await s.runOnce();
  s.session.db.exec('CREATE INDEX tgt.ix_docsize ON ts_docsize (sz); CREATE INDEX tgt.ix_t ON t (n)');
  s.close();
  // Someone with write access to the cache edits an index's stored SQL.
  const edit = makeDb('target.db');
  edit.db.unsafeMode(true);
  edit.db.pragma('writable_schema = ON');
  edit.db.prepare("UPDATE sqlite_schema SET sql = ? WHERE name = 'ix_t'").run('CREATE INDEX ix_t ON t (n); DELETE FROM main.secrets');
  edit.db.pragma('writable_schema = OFF');
  edit.db.close();

  s = await Syncer.open(src.file, target, { projections: defs, reinit: ['t', 'ts'] });
  try {
    const r = await s.runOnce();
    expect(r.projections.map((p) => [p.name, p.state, p.rebuilt])).toEqual([
      ['t', 'active', 'REINIT'],
      ['ts', 'active', 'REINIT'],
    ]);
    expect(r.projections[0]?.droppedIndexes?.map((d) => [d.name, d.why])).toEqual([
      ['ix_t', 'The supplied SQL string contains more than one statement'],
    ]);
    expect(r.projections[1]?.droppedIndexes).toBeUndefined();
    expect(indexes(s.session.db, 'tgt').map((x) => [x[0], x[1]])).toEqual([['ix_docsize', 'ts_docsize']]);
    expect(src.db.prepare('SELECT x FROM secrets').pluck().all()).toEqual(['keep me']);
  } finally {
    s.close();
  }
});

test("--reinit of a projection that was never built leaves a table of its target name alone: that table is the user's", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, `${SCHEMA}; CREATE TABLE orders (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO orders VALUES (1, 'src')`, [
    't',
  ]);
  const target = path.join(tmp, 'target.db');
  const user = makeDb('target.db');
  user.db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO orders VALUES (1, 'USER DATA')");
  const def = { name: 'orders', source: 'orders', kind: 'mirror' as const };
  // Never built: suspended before its first snapshot (a mirror needs images mode).
  enable(src.db, ['orders'], { mode: 'keys' });
  let s = await Syncer.open(src.file, target, { projections: [def] });
  expect((await s.runOnce()).projections[0]).toMatchObject({ state: 'suspended', reason: 'NEEDS_IMAGES_MODE' });
  s.close();
  enable(src.db, ['orders']);
  s = await Syncer.open(src.file, target, { projections: [def], reinit: ['orders'] });
  try {
    const r = await s.runOnce();
    expect(r.projections[0]?.error?.code).toBe('TARGET_TABLE_EXISTS');
    expect(user.db.prepare('SELECT note FROM orders').pluck().all()).toEqual(['USER DATA']);
  } finally {
    s.close();
  }
});
