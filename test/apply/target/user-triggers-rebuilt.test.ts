// a rebuild makes the triggers a user added to a target again, or says which it could not
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { runCli } from '../../support/fixtures.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { protect } from '../../../src/apply/edits/index.ts';
import { importFile } from '../../../src/export/index.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { makeSource, tableCells } from '../support/target.ts';
import { pythonExec } from '../../support/journal.ts';

/*
 * Users add triggers to a cache (an audit log of the rows sync writes, a
 * counter). A rebuild makes a projection's tables anew, beside the live
 * ones (a source column added, a changed definition, --reinit) or in one
 * transaction (an imported snapshot); the old tables go with their
 * triggers. The user's triggers are made again on the new tables, after
 * the copy (which they never see: a copy is the source's rows, not
 * events), in the swap's transaction; one that no longer fits (a column
 * the new table lacks) is left out and reported with its SQL, as the
 * user's indexes are. sluice's own guard triggers (protect) are made again
 * once, by protect's rule.
 */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, title TEXT, n INTEGER)';
const SEED = "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)";

function triggers(db: Db, schema: string): [string, string, string][] {
  return (
    db.prepare(`SELECT name, tbl_name, sql FROM ${schema}.sqlite_schema WHERE type = 'trigger' ORDER BY name`).raw().all() as [
      string,
      string,
      string,
    ][]
  ).map((r) => [...r]);
}

function sync(src: string, target: string): Record<string, unknown> & { projections: Record<string, unknown>[] } {
  const r = runCli(['sync', src, target, '--json']);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, unknown> & { projections: Record<string, unknown>[] };
}

test("a user's audit trigger on a mirror's table survives the rebuild beside the live one after `sluice alter ... ADD COLUMN`, with its exact SQL, is not fired by the copy, and audits later rows", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  sync(src.file, target);
  const tgt = openDatabase(target);
  try {
    tgt.exec(`CREATE TABLE audit (id, op);
      CREATE TRIGGER t_audit AFTER INSERT ON t BEGIN INSERT INTO audit VALUES (NEW.id, 'i'); END;
      CREATE TRIGGER "t del" BEFORE DELETE ON t WHEN OLD.n > 0 BEGIN INSERT INTO audit VALUES (OLD.id, 'd'); END;
      CREATE INDEX t_title ON t (title)`);
    const made = triggers(tgt, 'main');
    expect(made.map((x) => x[0])).toEqual(['t del', 't_audit']);

    const a = runCli(['alter', src.file, 'ALTER TABLE t ADD COLUMN z TEXT']);
    expect(a.status, a.stderr).toBe(0);
    const r = sync(src.file, target);
    expect(r.projections[0]).toMatchObject({ name: 't', state: 'active', swapped: true });
    expect(r.projections[0]?.droppedTriggers).toBeUndefined();
    expect(triggers(tgt, 'main')).toEqual(made);
    expect(tgt.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 't_title'").pluck().get()).toBe(1n);
    // The copy is the source's rows, not events: it fired nothing.
    expect(tgt.prepare('SELECT count(*) FROM audit').pluck().get()).toBe(0n);

    pythonExec(src.file, "INSERT INTO t VALUES (3, 'c', 3, 'z'); DELETE FROM t WHERE id = 1");
    sync(src.file, target);
    expect(tgt.prepare('SELECT id, op FROM audit ORDER BY rowid').raw().all()).toEqual([
      [3n, 'i'],
      [1n, 'd'],
    ]);
    expect(tableCells(tgt, 'main', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    tgt.close();
  }
});

test('a trigger that names a column the rebuilt table lacks is left out and reported with its SQL; the others are made again, and the guards of a protected target are made once', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  const map = { name: 'tmap', source: 't', kind: 'map' as const, columns: { id: 'id', title: 'title', n: 'n' } };
  let s = await Syncer.open(src.file, target, { projections: [map] });
  await s.runOnce();
  s.close();
  expect(protect(target, true).tables).toEqual([{ projection: 'tmap', table: 'tmap' }]);
  const tgt = openDatabase(target);
  const uses = 'CREATE TRIGGER uses_n AFTER INSERT ON tmap BEGIN INSERT INTO audit VALUES (NEW.n); END';
  const updateOf = 'CREATE TRIGGER upd_n AFTER UPDATE OF n ON tmap BEGIN INSERT INTO audit VALUES (NEW.id); END';
  try {
    tgt.exec(`CREATE TABLE audit (x);
      ${uses};
      ${updateOf};
      CREATE TRIGGER keeps AFTER DELETE ON tmap BEGIN INSERT INTO audit VALUES (OLD.id); END`);
    const guards = triggers(tgt, 'main').filter((x) => x[0].startsWith('_sluice_protect_'));
    expect(guards).toHaveLength(3);

    // The map no longer has column n: a changed definition, rebuilt beside the live one.
    s = await Syncer.open(src.file, target, { projections: [{ ...map, columns: { id: 'id', title: 'title' } }] });
    try {
      const r = await s.runOnce();
      expect(r.projections[0]).toMatchObject({ state: 'active', rebuilt: 'DEFINITION_CHANGED', swapped: true });
      // In the order they were made.
      expect(r.projections[0]?.droppedTriggers).toEqual([
        { name: 'uses_n', table: 'tmap', why: expect.stringMatching(/no such column: NEW\.n/), sql: uses },
        { name: 'upd_n', table: 'tmap', why: expect.stringMatching(/UPDATE OF n.*no column n/), sql: updateOf },
      ]);
    } finally {
      s.close();
    }
    // The guards once, as protect makes them, and the user's trigger that still fits.
    const keeps: [string, string, string] = [
      'keeps',
      'tmap',
      'CREATE TRIGGER keeps AFTER DELETE ON tmap BEGIN INSERT INTO audit VALUES (OLD.id); END',
    ];
    expect(triggers(tgt, 'main').filter((x) => x[1] === 'tmap')).toEqual([...guards, keeps].sort((x, y) => (x[0] < y[0] ? -1 : 1)));
    src.db.exec('DELETE FROM t WHERE id = 2');
    const r = runCli(['sync', src.file, target]);
    expect(r.status, r.stderr).toBe(0);
    expect(tgt.prepare('SELECT x FROM audit').pluck().all()).toEqual([2n]);
  } finally {
    tgt.close();
  }
});

test('the text report names a trigger left out, why, and its SQL to make it again', async ({ makeDb, tmp }) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  sync(src.file, target);
  const tgt = openDatabase(target);
  try {
    tgt.exec('CREATE TABLE audit (x); CREATE TRIGGER t_n AFTER INSERT ON t BEGIN INSERT INTO audit VALUES (NEW.n); END');
  } finally {
    tgt.close();
  }
  // n dropped at the source: the mirror is rebuilt over the new columns.
  const a = runCli(['alter', src.file, 'ALTER TABLE t DROP COLUMN n']);
  expect(a.status, a.stderr).toBe(0);
  const r = runCli(['sync', src.file, target]);
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout).toContain(
    'your trigger t_n on t could not be made again on the rebuilt table (no such column: NEW.n); to make it again, fix and run: CREATE TRIGGER t_n AFTER INSERT ON t BEGIN INSERT INTO audit VALUES (NEW.n); END',
  );
});

test('triggers on an fts5 key table and on a mirror survive --reinit, and a snapshot imported in one transaction', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  const defs = [
    { name: 't', source: 't', kind: 'mirror' as const },
    { name: 'ts', source: 't', kind: 'fts5' as const, columns: ['title'], content: 'external' as const },
  ];
  const s = await Syncer.open(src.file, target, { projections: defs });
  try {
    await s.runOnce();
    s.session.db.exec(`CREATE TABLE tgt.audit (x);
      CREATE TRIGGER tgt.ts_keys AFTER INSERT ON ts_src BEGIN INSERT INTO audit VALUES ('ts'); END;
      CREATE TRIGGER tgt.t_ins AFTER INSERT ON t BEGIN INSERT INTO audit VALUES ('t'); END`);
    const made = triggers(s.session.db, 'tgt');
    const r = await s.runOnce({ reinit: ['t', 'ts'] });
    expect(r.projections.map((p) => [p.name, p.state, p.rebuilt, p.droppedTriggers])).toEqual([
      ['t', 'active', 'REINIT', undefined],
      ['ts', 'active', 'REINIT', undefined],
    ]);
    expect(triggers(s.session.db, 'tgt')).toEqual(made);
    src.db.exec("INSERT INTO t VALUES (3, 'c', 3)");
    await s.runOnce();
    expect(s.session.db.prepare('SELECT x FROM tgt.audit ORDER BY x').pluck().all()).toEqual(['t', 'ts']);
  } finally {
    s.close();
  }

  // import: a newer snapshot replaces the tables in one transaction.
  const imported = path.join(tmp, 'imported.db');
  const file = path.join(tmp, 'all.jsonl');
  expect(runCli(['export', src.file, '--out', file]).status).toBe(0);
  await importFile(imported, file);
  const tgt = openDatabase(imported);
  try {
    tgt.exec(`CREATE TABLE audit (x);
      CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN INSERT INTO audit VALUES (NEW.id); END;
      CREATE TRIGGER t_n AFTER UPDATE ON t BEGIN INSERT INTO audit VALUES (NEW.gone); END`);
    src.db.exec("INSERT INTO t VALUES (4, 'd', 4)");
    const again = path.join(tmp, 'again.jsonl');
    expect(runCli(['export', src.file, '--out', again]).status).toBe(0);
    const r = await importFile(imported, again);
    expect(r.projections[0]?.droppedTriggers).toEqual([
      { name: 't_n', table: 't', why: 'no such column: NEW.gone', sql: expect.stringMatching(/^CREATE TRIGGER t_n /) },
    ]);
    expect(triggers(tgt, 'main').map((x) => x[0])).toEqual(['t_ins']);
    expect(tgt.prepare('SELECT count(*) FROM audit').pluck().get()).toBe(0n);
    expect(tableCells(tgt, 'main', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    tgt.close();
  }
});
