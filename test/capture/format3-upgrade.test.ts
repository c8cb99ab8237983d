// a source made by capture format 3 (last seq rewritten per event) upgraded in place
import { test, expect } from '../support/fixtures.ts';
import { copyOldFixture } from '../support/old-fixture.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable, status, FORMAT_VERSION } from '../../src/capture/index.ts';
import { readBatch, journalStartCursor, changedSince } from '../../src/feed/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { verify } from '../../src/apply/check/index.ts';
import { pythonExec } from '../support/journal.ts';

/*
 * fixtures/format3 holds a source and a target written by a sluice of
 * capture format 3 (see its README), whose capture triggers rewrote each
 * table's row of _sluice_last on every event. Readers read it as it is;
 * enable upgrades it in place: the tables get the new triggers without a
 * re-arm (same generations), the journal its tick with the checkpoint at
 * the newest seq, and every cursor goes on: last seqs stay exact, and the
 * target syncs on with no rebuild.
 */

const lastSeqs = (db: Db) => Object.fromEntries(status(db).tables.map((t) => [t.name, t.lastSeq]));
const newest = (db: Db) =>
  Object.fromEntries(
    (
      db.prepare('SELECT t.name, max(j.seq) AS s FROM _sluice_journal j JOIN _sluice_tables t USING (tid) GROUP BY t.name').all() as {
        name: string;
        s: bigint;
      }[]
    ).map((r) => [r.name, Number(r.s)]),
  );

test('a format 3 source is read as it is, and enable upgrades it in place: same generations, exact last seqs, cursors and targets go on', async ({
  tmp,
}) => {
  const {
    source,
    targets: [target],
  } = copyOldFixture('format3', tmp, ['target']);
  const db = openDatabase(source);
  try {
    const state = () => db.prepare('SELECT format, generation, bumped_generation AS bumped FROM _sluice_state').get();
    const armed = () => db.prepare('SELECT name, armed_generation, armed_seq FROM _sluice_tables ORDER BY tid').all();
    const before = { state: state(), armed: armed() };
    expect(before.state).toMatchObject({ format: 3n });
    expect(status(db).tables.every((t) => t.armed)).toBe(true);
    expect(lastSeqs(db)).toEqual({ notes: 38, users: 1, tags: 39 });
    expect(newest(db)).toEqual(lastSeqs(db));

    const cursor = journalStartCursor(db, ['notes', 'users', 'tags']);
    const old = readBatch(db, cursor, { limit: 1000 });
    expect(changedSince(db, old.to).changed).toBe(false);

    const r = enable(db, []);
    expect([r.created, r.rearmed]).toEqual([false, []]);
    expect(state()).toEqual({ ...(before.state as object), format: BigInt(FORMAT_VERSION) });
    expect(armed()).toEqual(before.armed);
    expect(status(db).tables.every((t) => t.armed)).toBe(true);
    // No capture trigger writes _sluice_last any more; the checkpoint starts at the newest seq.
    const triggers = db
      .prepare("SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '\\_sluice\\_t%' ESCAPE '\\'")
      .pluck()
      .all();
    expect(triggers.length).toBeGreaterThan(0);
    expect(triggers.some((sql) => String(sql).includes('_sluice_last'))).toBe(false);
    expect(db.prepare('SELECT seq FROM _sluice_last WHERE tid = 0').pluck().get()).toBe(39n);
    expect(lastSeqs(db)).toEqual({ notes: 38, users: 1, tags: 39 });
    // enable again takes the upgraded objects for sluice's own (the namespace gate), and re-arms nothing.
    expect(enable(db, ['notes']).rearmed).toEqual([]);

    // The cursor from before the upgrade goes on, with no rebuild.
    expect(changedSince(db, old.to)).toMatchObject({ changed: false });
    expect(readBatch(db, cursor, { limit: 1000 }).events.map((e) => e.seq)).toEqual(old.events.map((e) => e.seq));
    pythonExec(
      source,
      "INSERT INTO users VALUES (4, 'd@x', 'Di'); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20) INSERT INTO tags SELECT 'n' || i, i FROM c; UPDATE notes SET n = 1 WHERE id = 5",
    );
    expect(lastSeqs(db)).toEqual({ notes: 61, users: 40, tags: 60 });
    expect(newest(db)).toEqual(lastSeqs(db));
    expect(changedSince(db, old.to, ['users'])).toMatchObject({ changed: true, lastSeq: 40 });
    const next = readBatch(db, old.to, { limit: 1000 });
    expect(next.events.map((e) => e.seq)).toEqual(Array.from({ length: 22 }, (_, i) => 40 + i));
    expect(changedSince(db, next.to).changed).toBe(false);
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
