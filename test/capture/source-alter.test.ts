// sluice alter runs ddl on a captured table and tells each projection what changed
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { enable, alter, readDdlLog, readState, verifyCapture } from '../../src/capture/index.ts';
import { forecastAlter, journalStartCursor, readBatch } from '../../src/feed/index.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { sync, Syncer } from '../../src/apply/sync/index.ts';
import { verify } from '../../src/apply/check/index.ts';
import type { ProjectionDefinition } from '../../src/projection/index.ts';

/*
 * sluice alter runs DDL on a captured source in one write transaction with
 * the capture triggers out of the way and armed again after. What each
 * projection does at its next sync depends on what the DDL changed and on
 * what the projection reads.
 */

const SCHEMA = `
CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT);
CREATE TABLE u (id INTEGER PRIMARY KEY, w TEXT);
INSERT INTO t VALUES (1, 'a1', 'b1'), (2, 'a2', 'b2');
INSERT INTO u VALUES (1, 'w1');`;

const PROJECTIONS: ProjectionDefinition[] = [
  { name: 'mirror_t', source: 't', kind: 'mirror' },
  { name: 'map_a', source: 't', kind: 'map', columns: { id: 'id', a: 'a' } },
  { name: 'map_b', source: 't', kind: 'map', columns: { id: 'id', b: 'b' } },
  { name: 'mirror_u', source: 'u', kind: 'mirror' },
];

function rows(file: string, sql: string): unknown[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db.prepare(sql).raw().all();
  } finally {
    db.close();
  }
}

function outcomes(r: Awaited<ReturnType<typeof sync>>): unknown[] {
  return r.projections.map((p) => [p.name, p.state, p.rebuilt ?? p.reason ?? null]);
}

async function setUp(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, tmp: string) {
  const { db, file } = makeDb('app.db', SCHEMA);
  enable(db, ['t', 'u']);
  const target = path.join(tmp, 'cache.db');
  await sync(file, target, { projections: PROJECTIONS });
  return { db, file, target };
}

describe('sluice alter', () => {
  test('DROP COLUMN fails while capture is on, and through alter it works: the mirror rebuilds, a map of the dropped column suspends, a map of the other columns goes on', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file, target } = await setUp(makeDb, tmp);
    expect(() => db.exec('ALTER TABLE t DROP COLUMN b')).toThrow(/error in trigger _sluice_t1_/);
    const generation = readState(db)?.generation;

    const r = alter(db, 'ALTER TABLE t DROP COLUMN b');
    expect(r.tables).toEqual([
      { table: 't', change: 'altered', columnsBefore: ['id', 'a', 'b'], columnsAfter: ['id', 'a'], added: [], removed: ['b'], renamed: [] },
    ]);
    expect(verifyCapture(db).ok).toBe(true);
    expect(readState(db)?.generation).toBe(generation);
    db.exec("UPDATE t SET a = 'a1 after' WHERE id = 1; INSERT INTO t VALUES (3, 'a3'); UPDATE u SET w = 'w1 after'");

    // The stored definitions: map_b's no longer fits the source.
    const s = await sync(file, target);
    expect(outcomes(s).sort()).toEqual([
      ['map_a', 'active', null],
      ['map_b', 'suspended', 'SOURCE_COLUMN_MISSING'],
      ['mirror_t', 'active', 'DEFINITION_CHANGED'],
      ['mirror_u', 'active', null],
    ]);
    expect(s.projections.find((p) => p.name === 'map_a')?.applied).toBe(2);
    const source = [
      [1n, 'a1 after'],
      [2n, 'a2'],
      [3n, 'a3'],
    ];
    expect(rows(target, 'SELECT * FROM t ORDER BY id')).toEqual(source);
    expect(rows(target, 'SELECT * FROM map_a ORDER BY id')).toEqual(source);
    expect(rows(target, 'SELECT * FROM u')).toEqual([[1n, 'w1 after']]);
  });

  test('test_schema_evolution_additive_column_continues_or_rebuilds: ADD COLUMN keeps the generation, and a map that does not use the column goes on without a rebuild while the mirror rebuilds', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file, target } = await setUp(makeDb, tmp);
    const before = readState(db);
    alter(db, "ALTER TABLE t ADD COLUMN c TEXT DEFAULT 'none'");
    const after = readState(db);
    expect([after?.generation, after?.bumpedGeneration]).toEqual([before?.generation, before?.bumpedGeneration]);
    db.exec("UPDATE t SET a = 'a2 after', c = 'c2' WHERE id = 2");

    const s = await sync(file, target, { projections: PROJECTIONS });
    expect(outcomes(s)).toEqual([
      ['mirror_t', 'active', 'DEFINITION_CHANGED'],
      ['map_a', 'active', null],
      ['map_b', 'active', null],
      ['mirror_u', 'active', null],
    ]);
    expect(s.projections.find((p) => p.name === 'map_a')?.applied).toBe(1);
    expect(rows(target, 'SELECT * FROM map_a ORDER BY id')).toEqual([
      [1n, 'a1'],
      [2n, 'a2 after'],
    ]);
    expect(rows(target, 'SELECT * FROM t ORDER BY id')).toEqual([
      [1n, 'a1', 'b1', 'none'],
      [2n, 'a2 after', 'b2', 'c2'],
    ]);
  });

  test('a map with events of the table still to apply from before the alter rebuilds (the old layout is not decoded), and ends equal to the source', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file, target } = await setUp(makeDb, tmp);
    db.exec("UPDATE t SET a = 'a1 before' WHERE id = 1");
    alter(db, 'ALTER TABLE t ADD COLUMN c TEXT');
    db.exec("UPDATE t SET a = 'a2 after' WHERE id = 2");
    const s = await sync(file, target, { projections: PROJECTIONS.filter((p) => p.name === 'map_a') });
    expect(outcomes(s)).toEqual([['map_a', 'active', 'SCHEMA_CHANGED']]);
    expect(rows(target, 'SELECT * FROM map_a ORDER BY id')).toEqual([
      [1n, 'a1 before'],
      [2n, 'a2 after'],
    ]);
  });

  test('verify of a map that goes on across an alter reads the keys changed since by the new layout, and one with old-layout events to apply is not compared', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file, target } = await setUp(makeDb, tmp);
    alter(db, 'ALTER TABLE t DROP COLUMN b');
    db.exec("UPDATE t SET a = 'a2 after' WHERE id = 2; DELETE FROM t WHERE id = 1");
    const v = await verify(file, target);
    const mapA = v.projections.find((p) => p.name === 'map_a');
    expect([mapA?.ok, mapA?.inFlight, mapA?.diffs]).toEqual([true, 2, []]);

    await sync(file, target);
    db.exec("UPDATE t SET a = 'a2 before' WHERE id = 2");
    alter(db, 'ALTER TABLE t ADD COLUMN c TEXT');
    const w = await verify(file, target);
    expect(w.projections.find((p) => p.name === 'map_a')).toMatchObject({ ok: false, reason: 'SCHEMA_CHANGED' });
  });

  test('a follower compiled before the alter compiles its projections again at its next run, and goes on exactly as a new sync would', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t']);
    const target = path.join(tmp, 'cache.db');
    const defs = PROJECTIONS.filter((p) => p.name === 'map_a' || p.name === 'mirror_t');
    const follower = await Syncer.open(file, target, { projections: defs });
    try {
      await follower.runOnce();
      alter(db, 'ALTER TABLE t DROP COLUMN b');
      db.exec("UPDATE t SET a = 'a1 after' WHERE id = 1");
      const r = await follower.runOnce();
      expect(outcomes(r)).toEqual([
        ['mirror_t', 'active', 'DEFINITION_CHANGED'],
        ['map_a', 'active', null],
      ]);
      expect(rows(target, 'SELECT * FROM map_a ORDER BY id')).toEqual([
        [1n, 'a1 after'],
        [2n, 'a2'],
      ]);
      expect(rows(target, 'SELECT * FROM t ORDER BY id')).toEqual([
        [1n, 'a1 after'],
        [2n, 'a2'],
      ]);
    } finally {
      follower.close();
    }
  });

  test('an alter in the middle of a run (after the projections were compiled for it) never applies the new layout with the old columns: that projection fails loudly with nothing applied, and the next run goes on exactly', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t']);
    const target = path.join(tmp, 'cache.db');
    const defs = PROJECTIONS.filter((p) => p.name === 'map_a' || p.name === 'mirror_t');
    let altering = false;
    const follower = await Syncer.open(file, target, {
      projections: defs,
      // Between the two projections of a run: the second was compiled against the old columns.
      onProgress: (e) => {
        if (!altering || e.projection !== 'mirror_t' || e.phase !== 'current') return;
        altering = false;
        alter(db, 'ALTER TABLE t DROP COLUMN b');
        db.exec("UPDATE t SET a = 'a1 after' WHERE id = 1");
      },
    });
    try {
      await follower.runOnce();
      altering = true;
      const r = await follower.runOnce();
      expect(r.projections.map((p) => [p.name, p.error?.code])).toEqual([
        ['mirror_t', undefined],
        ['map_a', 'PROJECTION_OUTDATED'],
      ]);
      expect(rows(target, 'SELECT * FROM map_a ORDER BY id')).toEqual([
        [1n, 'a1'],
        [2n, 'a2'],
      ]);
      const next = await follower.runOnce();
      expect(outcomes(next)).toEqual([
        ['mirror_t', 'active', 'DEFINITION_CHANGED'],
        ['map_a', 'active', null],
      ]);
      expect(rows(target, 'SELECT * FROM map_a ORDER BY id')).toEqual([
        [1n, 'a1 after'],
        [2n, 'a2'],
      ]);
    } finally {
      follower.close();
    }
  });

  test('a change-stream reader of the altered table rebuilds (SCHEMA_CHANGED), and one of an untouched table goes on: the alter opens no schema window', async ({
    makeDb,
  }) => {
    const { db } = makeDb('app.db', SCHEMA);
    enable(db, ['t', 'u']);
    const ofT = journalStartCursor(db, ['t']);
    const ofU = journalStartCursor(db, ['u']);
    alter(db, 'ALTER TABLE t ADD COLUMN c TEXT; CREATE INDEX u_w ON u (w)');
    db.exec("UPDATE u SET w = 'w1 after'");
    expect(() => readBatch(db, ofT)).toThrow(expect.objectContaining({ code: 'SCHEMA_CHANGED' }));
    expect(readBatch(db, ofU).events.map((e) => [e.table, e.op])).toEqual([['u', 'update']]);
  });

  test("test_schema_evolution_recreated_object_oid_is_not_reused: a table rebuilt by the 12-step procedure is a new identity: only its projections rebuild (TABLE_REARMED), the other table's go on, and no bump", async ({
    makeDb,
    tmp,
  }) => {
    const { db, file, target } = await setUp(makeDb, tmp);
    const before = readState(db);
    const r = alter(
      db,
      `CREATE TABLE t_new (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b TEXT);
       INSERT INTO t_new SELECT id, upper(a), b FROM t;
       DROP TABLE t;
       ALTER TABLE t_new RENAME TO t;`,
    );
    expect(r.tables.map((x) => [x.table, x.change])).toEqual([['t', 'rebuilt']]);
    expect(r.generation).toBe((before?.generation ?? 0) + 1);
    expect(readState(db)?.bumpedGeneration).toBe(before?.bumpedGeneration);
    expect(verifyCapture(db).ok).toBe(true);
    db.exec("UPDATE u SET w = 'w1 after'");

    const s = await sync(file, target, { projections: PROJECTIONS });
    expect(outcomes(s)).toEqual([
      ['mirror_t', 'active', 'TABLE_REARMED'],
      ['map_a', 'active', 'TABLE_REARMED'],
      ['map_b', 'active', 'TABLE_REARMED'],
      ['mirror_u', 'active', null],
    ]);
    expect(rows(target, 'SELECT * FROM map_a ORDER BY id')).toEqual([
      [1n, 'A1'],
      [2n, 'A2'],
    ]);
  });

  test('alter records which column each column is: a RENAME COLUMN, however it is written, carries the column to its new name; a name dropped and added again is a new column, recorded even where the table reads as it was; a rebuilt table keeps none', async ({
    makeDb,
  }) => {
    const { db } = makeDb('app.db', SCHEMA);
    enable(db, ['t', 'u']);
    const last = () =>
      readDdlLog(db)
        .at(-1)
        ?.tables.map((t) => [t.table, t.columnsFrom]);
    const swap = alter(
      db,
      'ALTER TABLE main."t" RENAME COLUMN [a] TO `tmp`; alter table T rename B to A; ALTER TABLE t RENAME COLUMN \'tmp\' TO b -- done',
    );
    expect(swap.tables).toEqual([
      {
        table: 't',
        change: 'altered',
        columnsBefore: ['id', 'a', 'b'],
        columnsAfter: ['id', 'b', 'A'],
        added: [],
        removed: [],
        renamed: [
          { from: 'a', to: 'b' },
          { from: 'b', to: 'A' },
        ],
      },
    ]);
    expect(last()).toEqual([['t', ['id', 'a', 'b']]]);

    // Dropped and added again as it was: the same CREATE TABLE text and fingerprint, and still another column.
    const sql = db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'u'").pluck().get();
    const again = alter(db, 'ALTER TABLE u DROP COLUMN w; ALTER TABLE u ADD COLUMN w TEXT');
    expect(db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'u'").pluck().get()).toBe(sql);
    expect(again.tables.map((t) => [t.table, t.change, t.added, t.removed, t.renamed])).toEqual([['u', 'altered', ['w'], ['w'], []]]);
    expect(last()).toEqual([['u', ['id', null]]]);

    alter(
      db,
      'CREATE TABLE t2 (id INTEGER PRIMARY KEY, b TEXT, a TEXT); INSERT INTO t2 SELECT * FROM t; DROP TABLE t; ALTER TABLE t2 RENAME TO t',
    );
    expect(last()).toEqual([['t', [null, null, null]]]);
  });

  test('a captured table dropped by an alter stays captured and unarmed (TABLE_MISSING), its projection is suspended, and later alters still run', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file, target } = await setUp(makeDb, tmp);
    expect(alter(db, 'DROP TABLE u').tables.map((x) => [x.table, x.change])).toEqual([['u', 'dropped']]);
    expect(verifyCapture(db).tables.map((a) => [a.table.name, a.armed, a.reason ?? null])).toEqual([
      ['t', true, null],
      ['u', false, 'TABLE_MISSING'],
    ]);
    expect(alter(db, 'ALTER TABLE t ADD COLUMN c TEXT').tables.map((x) => x.table)).toEqual(['t']);
    const s = await sync(file, target);
    expect(s.projections.find((p) => p.name === 'mirror_u')).toMatchObject({ state: 'suspended', reason: 'SOURCE_TABLE_MISSING' });
    expect(s.projections.find((p) => p.name === 'map_a')).toMatchObject({ state: 'active' });
    expect(s.projections.find((p) => p.name === 'map_a')?.rebuilt).toBeUndefined();
  });

  test('--dry-run changes nothing and tells each known consumer what its projection of the table will do, saying when it depends on a definition the source does not know', async ({
    makeDb,
    tmp,
  }) => {
    const { db, target } = await setUp(makeDb, tmp);
    const schema = db.prepare('SELECT rowid, * FROM sqlite_schema ORDER BY rowid').all();
    const plan = alter(db, 'ALTER TABLE t DROP COLUMN b', { dryRun: true });
    expect(plan).toMatchObject({ dryRun: true, statements: 1, tables: [{ table: 't', change: 'altered', removed: ['b'] }] });
    expect(db.prepare('SELECT rowid, * FROM sqlite_schema ORDER BY rowid').all()).toEqual(schema);

    const forecast = forecastAlter(db, plan);
    const at = (projection: string) => forecast.find((f) => f.consumer.startsWith(`${projection}@`));
    expect(forecast).toHaveLength(4);
    expect(at('mirror_u')?.effects).toEqual([]);
    const effect = at('map_a')?.effects[0];
    expect(effect).toMatchObject({ table: 't', outcome: 'depends' });
    expect(effect?.detail).toContain('does not store projection definitions');
    expect(at('map_a')?.consumer).toContain(path.basename(target));

    const rebuild = forecastAlter(
      db,
      alter(
        db,
        'CREATE TABLE t2 (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO t2 SELECT * FROM t; DROP TABLE t; ALTER TABLE t2 RENAME TO t',
        { dryRun: true },
      ),
    );
    expect(rebuild.find((f) => f.consumer.startsWith('mirror_t@'))?.effects).toMatchObject([{ table: 't', outcome: 'rebuilds' }]);
  });
});
