// a source made by capture format 4 (the flush in the flush triggers' body) upgraded in place
import { test, expect } from '../support/fixtures.ts';
import { copyOldFixture } from '../support/old-fixture.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable, status, FORMAT_VERSION } from '../../src/capture/index.ts';
import { readBatch, journalStartCursor, changedSince } from '../../src/feed/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { verify } from '../../src/apply/check/index.ts';
import { pythonExec } from '../support/journal.ts';

/*
 * fixtures/format4 holds a source and a target written by a sluice of
 * capture format 4 (see its README). Readers read it as it is; enable
 * upgrades it in place: the tables get format 5's flush triggers and the
 * flush view without a re-arm (same generations), what an event holds is
 * unchanged, every cursor goes on and the target syncs on with no rebuild.
 * A REPLACE through the UNIQUE email from Python (no recursive_triggers)
 * journals the replaced row's delete with either format's triggers.
 */

const lastSeqs = (db: Db) => Object.fromEntries(status(db).tables.map((t) => [t.name, t.lastSeq]));
const ownObjects = (db: Db) =>
  db
    .prepare(
      "SELECT type, name, tbl_name AS tbl FROM sqlite_schema WHERE name LIKE '\\_sluice\\_t%pfl' ESCAPE '\\' OR name = '_sluice_flush'",
    )
    .all();

test('a format 4 source is read as it is, and enable upgrades it in place: same generations, exact REPLACEs, cursors and targets go on', async ({
  tmp,
}) => {
  const {
    source,
    targets: [target],
  } = copyOldFixture('format4', tmp, ['target']);
  const db = openDatabase(source);
  try {
    const state = () => db.prepare('SELECT format, generation, bumped_generation AS bumped FROM _sluice_state').get();
    const armed = () => db.prepare('SELECT name, armed_generation, armed_seq FROM _sluice_tables ORDER BY tid').all();
    const before = { state: state(), armed: armed() };
    expect(before.state).toMatchObject({ format: 4n });
    expect(status(db).tables.every((t) => t.armed)).toBe(true);
    expect(lastSeqs(db)).toEqual({ notes: 38, users: 1, tags: 39 });
    expect(ownObjects(db)).toEqual([]);

    const cursor = journalStartCursor(db, ['notes', 'users', 'tags']);
    const old = readBatch(db, cursor, { limit: 1000 });
    expect(changedSince(db, old.to).changed).toBe(false);

    // Format 4's triggers, read as they are: the replaced row's delete, then the insert.
    pythonExec(source, "INSERT OR REPLACE INTO users VALUES (4, 'a@x', 'Al')");
    const replaced = readBatch(db, old.to, { limit: 1000 });
    expect(replaced.events.map((e) => [e.seq, e.op, e.table])).toEqual([
      [40, 'delete', 'users'],
      [41, 'insert', 'users'],
    ]);

    const r = enable(db, []);
    expect([r.created, r.rearmed]).toEqual([false, []]);
    expect(state()).toEqual({ ...(before.state as object), format: BigInt(FORMAT_VERSION) });
    expect(armed()).toEqual(before.armed);
    expect(status(db).tables.every((t) => t.armed)).toBe(true);
    expect(ownObjects(db)).toEqual([
      { type: 'view', name: '_sluice_flush', tbl: '_sluice_flush' },
      { type: 'trigger', name: '_sluice_t1_pfl', tbl: '_sluice_flush' },
      { type: 'trigger', name: '_sluice_t2_pfl', tbl: '_sluice_flush' },
      { type: 'trigger', name: '_sluice_t3_pfl', tbl: '_sluice_flush' },
    ]);
    // enable again takes the upgraded objects for sluice's own (the namespace gate), and re-arms nothing.
    expect(enable(db, ['notes']).rearmed).toEqual([]);

    // The cursor from before the upgrade goes on, with no rebuild.
    expect(readBatch(db, cursor, { limit: 1000 }).events.map((e) => e.seq)).toEqual([...old.events.map((e) => e.seq), 40, 41]);
    // Format 5's triggers: the same events for the same kind of write.
    pythonExec(source, "INSERT OR REPLACE INTO users VALUES (5, 'b@x', 'Bo'); INSERT OR REPLACE INTO tags VALUES ('a', 7)");
    const after = readBatch(db, replaced.to, { limit: 1000 }).events;
    expect(after.map((e) => [e.seq, e.op, e.table])).toEqual([
      [42, 'delete', 'users'],
      [43, 'insert', 'users'],
      [44, 'delete', 'tags'],
      [45, 'insert', 'tags'],
    ]);
    expect(lastSeqs(db)).toEqual({ notes: 38, users: 43, tags: 45 });
    expect(db.prepare('SELECT count(*) FROM _sluice_pending').pluck().get()).toBe(0n);
  } finally {
    db.close();
  }
  const synced = await sync(source, target as string);
  expect(synced.projections.map((p) => [p.name, p.state, p.rebuilt ?? null]).sort()).toEqual([
    ['notes', 'active', null],
    ['users', 'active', null],
  ]);
  expect((await verify(source, target as string)).ok).toBe(true);
});
