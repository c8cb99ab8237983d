// a sync that re arms capture says what it re armed and why
import path from 'node:path';
import { test, expect, describe, runPython, runCli } from '../../support/fixtures.ts';
import { enable, bump } from '../../../src/capture/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { sync, Syncer } from '../../../src/apply/sync/index.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';

/*
 * Opening a source for sync re-arms a capture that lost a trigger or whose
 * table changed. That is a write to the user's source: the report says what
 * was re-armed and why, and the rebuild it causes has its own reason,
 * CAPTURE_REARMED, instead of passing for a generation or definition change.
 */

const SCHEMA =
  "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE u (id INTEGER PRIMARY KEY, w TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b'); INSERT INTO u VALUES (1, 'x');";

/** An app that knows nothing of sluice changes the source (Python's sqlite3). */
function app(file: string, sql: string): void {
  runPython('import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.executescript(sys.argv[2])\nc.commit()\nc.close()', [file, sql]);
}

function rows(file: string, sql: string): unknown[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db.prepare(sql).raw().all();
  } finally {
    db.close();
  }
}

describe('a sync that re-arms capture', () => {
  test("a dropped trigger: the report names the table and TRIGGER_MISSING, that table's projection rebuilds with CAPTURE_REARMED, and the other table's goes on", async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    const first = enable(db, ['t', 'u']);
    db.close();
    const target = path.join(tmp, 'cache.db');
    expect((await sync(file, target)).rearmed).toBeUndefined();

    app(file, "DROP TRIGGER _sluice_t1_upd; UPDATE t SET v = 'unrecorded' WHERE id = 2");
    const r = await sync(file, target);
    expect(r.rearmed).toEqual({
      fromGeneration: first.generation,
      generation: first.generation + 1,
      tables: [{ table: 't', reason: 'TRIGGER_MISSING', detail: 'trigger _sluice_t1_upd is missing' }],
    });
    // Only t was re-armed: u's cursor stays valid, and u goes on from it.
    expect(r.projections.map((p) => [p.name, p.rebuilt])).toEqual([
      ['t', 'CAPTURE_REARMED'],
      ['u', undefined],
    ]);
    expect(rows(target, 'SELECT id, v FROM t ORDER BY id')).toEqual([
      [1n, 'a'],
      [2n, 'unrecorded'],
    ]);

    const again = await sync(file, target);
    expect(again.rearmed).toBeUndefined();
    expect(again.projections.map((p) => p.rebuilt)).toEqual([undefined, undefined]);
  });

  test('a new column: SCHEMA_CHANGED, and the mirror whose definition grew rebuilds with CAPTURE_REARMED, not DEFINITION_CHANGED', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t', 'u']);
    db.close();
    const target = path.join(tmp, 'cache.db');
    await sync(file, target);

    app(file, "ALTER TABLE t ADD COLUMN note TEXT; UPDATE t SET note = 'n' WHERE id = 1");
    const r = await sync(file, target);
    expect(r.rearmed?.tables).toMatchObject([{ table: 't', reason: 'SCHEMA_CHANGED' }]);
    expect(r.projections.find((p) => p.name === 't')?.rebuilt).toBe('CAPTURE_REARMED');
    expect(rows(target, 'SELECT id, v, note FROM t ORDER BY id')).toEqual([
      [1n, 'a', 'n'],
      [2n, 'b', null],
    ]);
  });

  test('a cursor already older than the re-arm (a bump in between) keeps its own reason, GENERATION_CHANGED', async ({ makeDb, tmp }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t', 'u']);
    const target = path.join(tmp, 'cache.db');
    await sync(file, target);
    bump(db, 'bulk reload');
    db.close();
    app(file, 'DROP TRIGGER _sluice_t2_ins');
    const r = await sync(file, target);
    expect(r.rearmed?.tables).toMatchObject([{ table: 'u', reason: 'TRIGGER_MISSING' }]);
    expect(r.projections.map((p) => p.rebuilt)).toEqual(['GENERATION_CHANGED', 'GENERATION_CHANGED']);
  });

  test('a syncer kept open, as sync --follow keeps one, re-arms at its next run each time an app unarms a table (a dropped trigger, then a newer user trigger), and not in the runs between', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t', 'u']);
    const s = await Syncer.open(file, path.join(tmp, 'cache.db'));
    try {
      await s.runOnce();
      const quiet = async (n: number) => {
        for (let i = 0; i < n; i++) {
          db.prepare('INSERT INTO u (w) VALUES (?)').run(`w${i}`);
          const r = await s.runOnce();
          expect(r.rearmed).toBeUndefined();
          expect(r.projections.map((p) => [p.name, p.state, p.rebuilt])).toEqual([
            ['t', 'active', undefined],
            ['u', 'active', undefined],
          ]);
        }
      };
      await quiet(3);
      app(file, "DROP TRIGGER _sluice_t1_upd; UPDATE t SET v = 'unrecorded' WHERE id = 2");
      const dropped = await s.runOnce();
      expect(dropped.rearmed?.tables).toEqual([{ table: 't', reason: 'TRIGGER_MISSING', detail: 'trigger _sluice_t1_upd is missing' }]);
      expect(dropped.projections.map((p) => [p.name, p.rebuilt])).toEqual([
        ['t', 'CAPTURE_REARMED'],
        ['u', undefined],
      ]);
      await quiet(3);
      app(file, "CREATE TRIGGER app_t_after AFTER UPDATE ON t BEGIN SELECT 1; END; UPDATE t SET v = 'seen' WHERE id = 1");
      const newer = await s.runOnce();
      expect(newer.rearmed?.tables.map((t) => [t.table, t.reason])).toEqual([['t', 'USER_TRIGGER_NEWER']]);
      await quiet(2);
    } finally {
      s.close();
    }
    expect(rows(path.join(tmp, 'cache.db'), 'SELECT id, v FROM t ORDER BY id')).toEqual(rows(file, 'SELECT id, v FROM t ORDER BY id'));
    expect(rows(path.join(tmp, 'cache.db'), 'SELECT id, w FROM u ORDER BY id')).toEqual(rows(file, 'SELECT id, w FROM u ORDER BY id'));
  });

  test('the CLI says it in its text and in --json', async ({ makeDb, tmp }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t']);
    db.close();
    const target = path.join(tmp, 'cache.db');
    await sync(file, target);
    app(file, 'DROP TRIGGER _sluice_t1_del');
    const text = runCli(['sync', file, target]);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain('re-armed capture on the source: t (TRIGGER_MISSING: trigger _sluice_t1_del is missing)');
    expect(text.stdout).toContain('t: rebuilt (CAPTURE_REARMED) from snapshot');

    app(file, 'DROP TRIGGER _sluice_t1_del');
    const json = runCli(['sync', file, target, '--json']);
    expect(json.status, json.stderr).toBe(0);
    const out = S.syncOutput.parse(JSON.parse(json.stdout));
    expect(out.rearmed?.tables).toEqual([{ table: 't', reason: 'TRIGGER_MISSING', detail: 'trigger _sluice_t1_del is missing' }]);
    expect(out.projections[0]?.rebuilt).toBe('CAPTURE_REARMED');
  });
});
