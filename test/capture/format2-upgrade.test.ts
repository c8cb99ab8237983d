// a source made by capture format 2 (no changed-column mask) upgraded in place
import { test, expect } from '../support/fixtures.ts';
import { copyOldFixture } from '../support/old-fixture.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable, status, FORMAT_VERSION, metadataDdl } from '../../src/capture/index.ts';
import { readBatch, journalStartCursor } from '../../src/feed/index.ts';
import { pythonExec } from '../support/journal.ts';

/*
 * fixtures/round2 holds a source written by a sluice of capture format 2
 * (see its README). Readers read it as it is (updates without a mask: every
 * column changed); enable upgrades it in place: the journal gains its mask
 * column, the tables get the new triggers without a re-arm, and a cursor
 * taken before goes on with no rebuild.
 */

const journalSql = (db: Db) => db.prepare("SELECT sql FROM sqlite_schema WHERE name = '_sluice_journal'").pluck().get() as string;
const columnDefs = (db: Db) =>
  db.prepare('SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(\'_sluice_journal\') ORDER BY name').all();

test('a format 2 source is read as it is, and enable upgrades it in place: same generations, cursors go on, new updates carry masks', ({
  tmp,
  makeDb,
}) => {
  const { source } = copyOldFixture('round2', tmp, []);
  const db = openDatabase(source);
  try {
    const state = () => db.prepare('SELECT format, generation, bumped_generation AS bumped FROM _sluice_state').get();
    const armed = () => db.prepare('SELECT name, armed_generation, armed_seq FROM _sluice_tables ORDER BY tid').all();
    const before = { state: state(), armed: armed(), events: db.prepare('SELECT count(*) FROM _sluice_journal').pluck().get() };
    expect(before.state).toMatchObject({ format: 2n });
    expect(journalSql(db)).not.toContain('mask');
    expect(status(db).tables.every((t) => t.armed)).toBe(true);

    const cursor = journalStartCursor(db, ['notes']);
    const old = readBatch(db, cursor).events;
    expect(old.some((e) => e.op === 'update')).toBe(true);
    expect(old.every((e) => !('changed' in e))).toBe(true);

    const r = enable(db, []);
    expect([r.created, r.rearmed]).toEqual([false, []]);
    expect(state()).toEqual({ ...(before.state as object), format: BigInt(FORMAT_VERSION) });
    expect(armed()).toEqual(before.armed);
    expect(db.prepare('SELECT count(*) FROM _sluice_journal').pluck().get()).toBe(before.events);
    expect(status(db).tables.every((t) => t.armed)).toBe(true);

    // The column is added with the text a fresh journal has: the same columns as a fresh journal of that width.
    const width = Number(db.prepare('SELECT journal_width FROM _sluice_state').pluck().get());
    expect(journalSql(db)).toBe(`${(metadataDdl(width)[2] as string).replace(', mask', '').slice(0, -1)}, mask)`);
    const { db: fresh } = makeDb('fresh.db', metadataDdl(width)[2]);
    expect(columnDefs(db)).toEqual(columnDefs(fresh));
    // enable again takes the upgraded journal for sluice's own (the namespace gate).
    expect(enable(db, ['notes']).rearmed).toEqual([]);

    const after = readBatch(db, cursor);
    expect(after.events.map((e) => e.seq)).toEqual(old.map((e) => e.seq));
    pythonExec(source, "UPDATE notes SET n = n + 1 WHERE id = 3; UPDATE notes SET title = 'again', body = 'b' WHERE id = 4");
    const next = readBatch(db, after.to).events;
    expect(next.map((e) => (e.op === 'update' ? e.changed : e.op))).toEqual([['n'], ['title', 'body']]);
  } finally {
    db.close();
  }
});
