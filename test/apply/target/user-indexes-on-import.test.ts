// import keeps user indexes and suspends on a broken unique one
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { runCli } from '../../support/fixtures.ts';
import { importFile } from '../../../src/export/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { highWater, makeSource, tableCells } from '../support/target.ts';

/*
 * `import` replays an export file into a target with the same rules as
 * sync: the indexes a user added survive a snapshot that replaces the
 * tables, and a UNIQUE one that a batch breaks suspends the projection with
 * TARGET_CONSTRAINT (a raw SQLITE_CONSTRAINT_UNIQUE before).
 */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT, n INTEGER)';
const SEED = "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)";

function exportTo(src: string, out: string): void {
  const r = runCli(['export', src, '--out', out, '--batch', '1']);
  expect(r.status, r.stderr).toBe(0);
}

test("a later snapshot in a file replaces the tables and makes the user's indexes again; a batch that breaks a UNIQUE one suspends the projection with TARGET_CONSTRAINT", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  exportTo(src.file, path.join(tmp, 'first.jsonl'));
  await importFile(target, path.join(tmp, 'first.jsonl'));
  const tgt = openDatabase(target);
  try {
    tgt.exec('CREATE INDEX ix_n ON t (n)');
    src.db.exec("UPDATE t SET n = 10 WHERE id = 1; INSERT INTO t VALUES (4, 'd', 4)");
    // A second file, from scratch: its snapshot is newer, so it replaces t.
    exportTo(src.file, path.join(tmp, 'second.jsonl'));
    const r = await importFile(target, path.join(tmp, 'second.jsonl'));
    expect(r.projections).toEqual([{ name: 't', state: 'active', seq: highWater(src.db) }]);
    expect(tgt.prepare("SELECT sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL").pluck().all()).toEqual([
      'CREATE INDEX ix_n ON t (n)',
    ]);
    expect(tableCells(tgt, 'main', 't')).toEqual(tableCells(src.db, 'main', 't'));

    tgt.exec('CREATE UNIQUE INDEX ux_email ON t (email)');
    src.db.exec("INSERT INTO t VALUES (5, 'a', 5)");
    exportTo(src.file, path.join(tmp, 'second.jsonl')); // continues the file from its cursor
    await expect(importFile(target, path.join(tmp, 'second.jsonl'))).rejects.toMatchObject({ code: 'TARGET_CONSTRAINT' });
    expect(tgt.prepare("SELECT state, reason FROM _sluice_projections WHERE name = 't'").raw().get()).toEqual([
      'suspended',
      'TARGET_CONSTRAINT',
    ]);
    expect(tgt.prepare('SELECT count(*) FROM t').pluck().get()).toBe(4n);
    // Once the index is dropped, importing the file again applies the batch.
    tgt.exec('DROP INDEX ux_email');
    const again = await importFile(target, path.join(tmp, 'second.jsonl'));
    expect(again.projections).toEqual([{ name: 't', state: 'active', seq: highWater(src.db) }]);
    expect(tableCells(tgt, 'main', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    tgt.close();
  }
});

test("a projection suspended by a UNIQUE index stays out of later imports while the index is there, and the target's other projections go on", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, `${SCHEMA}; CREATE TABLE u (id INTEGER PRIMARY KEY, v TEXT)`, ['t', 'u'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  const file = path.join(tmp, 'all.jsonl');
  exportTo(src.file, file);
  await importFile(target, file);
  const tgt = openDatabase(target);
  try {
    tgt.exec('CREATE UNIQUE INDEX ux_email ON t (email)');
    src.db.exec("INSERT INTO t VALUES (5, 'a', 5)");
    exportTo(src.file, file);
    await expect(importFile(target, file)).rejects.toMatchObject({ code: 'TARGET_CONSTRAINT' });
    src.db.exec("INSERT INTO u VALUES (1, 'one'), (2, 'two')");
    exportTo(src.file, file);
    const r = await importFile(target, file);
    expect(r.projections.map((p) => [p.name, p.state, p.reason])).toEqual([
      ['t', 'suspended', 'TARGET_CONSTRAINT'],
      ['u', 'active', undefined],
    ]);
    expect(tableCells(tgt, 'main', 'u')).toEqual(tableCells(src.db, 'main', 'u'));
    tgt.exec('DROP INDEX ux_email');
    const done = await importFile(target, file);
    expect(done.projections.map((p) => [p.name, p.state])).toEqual([
      ['t', 'active'],
      ['u', 'active'],
    ]);
    expect(tableCells(tgt, 'main', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    tgt.close();
  }
});
