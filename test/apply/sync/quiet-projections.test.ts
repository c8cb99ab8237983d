// a follower's pass leaves projections of untouched tables at their cursor, checked, and moves them on when idle or stopped
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';

/*
 * A follower runs a pass per source commit. A projection whose source table
 * the commit did not touch used to get a target transaction of its own in
 * every pass, only to move its cursor: with five tables written one at a
 * time, five transactions per commit. With leaveQuiet (what followSyncer
 * passes) such a projection stays at its cursor, checked against the
 * source, and settleQuiet moves it on; any write by another program to the
 * target makes the next pass step every projection again.
 */

function stored(target: string): Record<string, number> {
  const d = openDatabase(target, { readonly: true, role: 'target' });
  try {
    const rows = d.prepare('SELECT name, seq FROM _sluice_projections ORDER BY name').all() as { name: string; seq: bigint }[];
    return Object.fromEntries(rows.map((r) => [r.name, Number(r.seq)]));
  } finally {
    d.close();
  }
}

function rows(file: string, table: string, role: 'source' | 'target'): unknown[] {
  const d = openDatabase(file, { readonly: true, role });
  try {
    return d.prepare(`SELECT id, v FROM ${table} ORDER BY id`).raw().all();
  } finally {
    d.close();
  }
}

function hw(db: Db): number {
  return Number(db.prepare('SELECT max(seq) FROM _sluice_journal').pluck().get());
}

test('a pass with leaveQuiet steps only the projections whose table has new events; settleQuiet moves the others to the source', async ({
  tmp,
  makeDb,
}) => {
  const { db, file: src } = makeDb(
    'app.db',
    'CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT)',
  );
  enable(db, ['a', 'b']);
  const target = path.join(tmp, 'cache.db');
  const s = await Syncer.open(src, target);
  try {
    db.prepare("INSERT INTO a VALUES (1, 'one')").run();
    db.prepare("INSERT INTO b VALUES (1, 'uno')").run();
    await s.runOnce({ leaveQuiet: true });
    const first = stored(target);
    expect(first).toEqual({ a: hw(db), b: hw(db) });

    db.prepare("INSERT INTO a VALUES (2, 'two')").run();
    const r = await s.runOnce({ leaveQuiet: true });
    // a applied its event; b, with none, stayed where it was (no transaction for it), and says so.
    expect(stored(target)).toEqual({ a: hw(db), b: first.b });
    expect(r.projections.map((p) => [p.name, p.state, p.seq])).toEqual([
      ['a', 'active', hw(db)],
      ['b', 'active', first.b],
    ]);
    expect(r.sourceSeq).toBe(hw(db));
    expect(rows(target, 'a', 'target')).toEqual(rows(src, 'a', 'source'));

    // Without leaveQuiet every projection is stepped, as before.
    db.prepare("INSERT INTO a VALUES (3, 'three')").run();
    await s.runOnce();
    expect(stored(target)).toEqual({ a: hw(db), b: hw(db) });

    db.prepare("INSERT INTO a VALUES (4, 'four')").run();
    await s.runOnce({ leaveQuiet: true });
    expect(stored(target).b).toBeLessThan(hw(db));
    await s.settleQuiet();
    expect(stored(target)).toEqual({ a: hw(db), b: hw(db) });

    // A write to b is applied by the next pass, whatever was left quiet before.
    db.prepare("INSERT INTO a VALUES (5, 'five')").run();
    await s.runOnce({ leaveQuiet: true });
    db.prepare("UPDATE b SET v = 'eins' WHERE id = 1").run();
    await s.runOnce({ leaveQuiet: true });
    expect(rows(target, 'b', 'target')).toEqual(rows(src, 'b', 'source'));
    expect(stored(target).b).toBe(hw(db));
  } finally {
    s.close();
    db.close();
  }
});

test('after another program commits to the target, the next pass steps every projection (what the syncer remembers may be stale)', async ({
  tmp,
  makeDb,
}) => {
  const { db, file: src } = makeDb(
    'app.db',
    'CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT)',
  );
  enable(db, ['a', 'b']);
  const target = path.join(tmp, 'cache.db');
  const s = await Syncer.open(src, target);
  try {
    db.prepare("INSERT INTO b VALUES (1, 'uno')").run();
    await s.runOnce({ leaveQuiet: true });
    db.prepare("INSERT INTO a VALUES (1, 'one')").run();
    await s.runOnce({ leaveQuiet: true });
    const before = stored(target).b as number;
    expect(before).toBeLessThan(hw(db));
    // Another program's commit to the target, on a table of its own.
    const other = openDatabase(target, { role: 'target' });
    other.exec('CREATE TABLE notes (x)');
    other.close();
    db.prepare("INSERT INTO a VALUES (2, 'two')").run();
    await s.runOnce({ leaveQuiet: true });
    expect(stored(target)).toEqual({ a: hw(db), b: hw(db) });
  } finally {
    s.close();
    db.close();
  }
});
