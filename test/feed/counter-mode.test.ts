// counter mode tables answer changed since but refuse batches
import { test, expect, describe, runCli, runSqliteCli } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { snapshot, readBatch, journalStartCursor, changedSince, updatesSince, decodeCursor } from '../../src/feed/index.ts';
import { FailClosedError } from '../../src/errors.ts';

const SCHEMA =
  "CREATE TABLE settings (k TEXT PRIMARY KEY NOT NULL, v); INSERT INTO settings VALUES ('theme', 'dark'); CREATE TABLE t (id INTEGER PRIMARY KEY, v)";

describe('a counter-mode table', () => {
  test('can be snapshotted, and changedSince on its cursor is false until a real committed change', ({ makeDb }) => {
    const { db, file } = makeDb('c.db', SCHEMA);
    enable(db, ['settings'], { mode: 'counter' });
    enable(db, ['t']);
    const rows: unknown[] = [];
    const snap = snapshot(db, ['settings'], { onRow: (_t, r) => rows.push(r) });
    expect(rows).toEqual([['theme', 'dark']]);
    expect(changedSince(db, snap.cursor).changed).toBe(false);
    db.exec("UPDATE settings SET v = 'dark'; BEGIN; DELETE FROM settings; ROLLBACK; INSERT INTO t VALUES (1, 1)");
    expect(changedSince(db, snap.cursor).changed).toBe(false);
    runSqliteCli(file, "UPDATE settings SET v = 'light';");
    expect(changedSince(db, snap.cursor).changed).toBe(true);
    // Re-reading it whole gives a cursor that is unchanged again.
    const again = snapshot(db, ['settings'], { onRow: () => {} });
    expect(changedSince(db, again.cursor).changed).toBe(false);
  });

  test('can be asked about with a cursor over it and other tables, not with one over other tables only', ({ makeDb }) => {
    const { db } = makeDb('c.db', SCHEMA);
    enable(db, ['settings'], { mode: 'counter' });
    enable(db, ['t']);
    const cursor = snapshot(db, ['t', 'settings'], { onRow: () => {} }).cursor;
    const onlyT = snapshot(db, ['t'], { onRow: () => {} }).cursor;
    expect(changedSince(db, cursor, ['settings']).changed).toBe(false);
    // A cursor over t alone cannot tell whether settings was captured when it was made.
    expect(changedSince(db, onlyT, ['settings'])).toEqual({ changed: true, rebuild: 'TABLE_NOT_IN_CURSOR' });
    db.exec("INSERT INTO settings VALUES ('lang', 'en')");
    expect(changedSince(db, cursor, ['settings']).changed).toBe(true);
    expect(changedSince(db, cursor, ['t']).changed).toBe(false);
  });

  test('is left out of the default table set and refused by readBatch, updatesSince and journalStartCursor with COUNTER_MODE_TABLE', ({
    makeDb,
  }) => {
    const { db } = makeDb('c.db', SCHEMA);
    enable(db, ['settings'], { mode: 'counter' });
    enable(db, ['t']);
    db.exec("INSERT INTO settings VALUES ('lang', 'en'); INSERT INTO t VALUES (1, 1)");
    expect(decodeCursor(snapshot(db, undefined, { onRow: () => {} }).cursor).tables).toEqual(['t']);
    expect(decodeCursor(journalStartCursor(db)).tables).toEqual(['t']);
    const cursor = snapshot(db, ['settings', 't'], { onRow: () => {} }).cursor;
    expect(() => readBatch(db, cursor)).toThrow(FailClosedError);
    expect(() => readBatch(db, cursor)).toThrow(expect.objectContaining({ code: 'COUNTER_MODE_TABLE', exitCode: 3 }));
    // The images-mode part of the same cursor is still readable on its own.
    expect(readBatch(db, cursor, { tables: ['t'] }).events).toEqual([]);
    expect(() => [...updatesSince(db, 'settings')]).toThrow(expect.objectContaining({ code: 'COUNTER_MODE_TABLE' }));
    expect(() => journalStartCursor(db, ['settings'])).toThrow(expect.objectContaining({ code: 'COUNTER_MODE_TABLE' }));
    db.close();
  });

  test('readBatch, updatesSince and journalStartCursor refuse it in the same words, naming the table and both ways on', ({ makeDb }) => {
    const { db } = makeDb('c.db', SCHEMA);
    enable(db, ['settings'], { mode: 'counter' });
    enable(db, ['t']);
    const cursor = snapshot(db, ['settings', 't'], { onRow: () => {} }).cursor;
    const message = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return (err as Error).message;
      }
      return 'no error';
    };
    const messages = [
      message(() => readBatch(db, cursor)),
      message(() => [...updatesSince(db, 'settings', cursor)]),
      message(() => [...updatesSince(db, 'settings')]),
      message(() => journalStartCursor(db, ['settings'])),
    ];
    expect(new Set(messages)).toEqual(
      new Set([
        'Table settings is captured in counter mode, which records only that it changed, not which rows. Use changedSince for it (and re-read it whole), or re-enable it with --mode images or keys.',
      ]),
    );
    db.close();
  });

  test('the changes CLI exits 3 with COUNTER_MODE_TABLE for it', ({ makeDb }) => {
    const { db, file } = makeDb('c.db', SCHEMA);
    enable(db, ['settings'], { mode: 'counter' });
    db.close();
    const r = runCli(['changes', file, '--table', 'settings']);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/^sluice: COUNTER_MODE_TABLE: .*settings/);
  });
});
