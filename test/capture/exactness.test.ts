import { randomBytes } from 'node:crypto';
import { test, expect, describe } from '../support/fixtures.ts';
import { enable, status } from '../../src/capture/index.ts';
import { journalEvents, rowCells, cell, type JournalEvent } from '../support/journal.ts';
import type { Db } from '../../src/sqlite/index.ts';

/*
 * Images are compared with the source byte for byte: typeof() plus hex() (a
 * REAL by its IEEE-754 bytes). A change is anything that changes a storage
 * class or a byte; nothing else is.
 */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, v, n TEXT COLLATE NOCASE, i INTEGER, r REAL)';

function setUp(makeDb: (name?: string, schema?: string) => { db: Db; file: string }): Db {
  const { db } = makeDb('x.db', SCHEMA);
  enable(db, ['t']);
  return db;
}

/** Inserts (id, v) and returns the insert event, checked against the stored row. */
function insertAndCheck(db: Db, id: number, vSql: string, params: readonly unknown[] = []): JournalEvent {
  const before = journalEvents(db).length;
  db.prepare(`INSERT INTO t (id, v) VALUES (?, ${vSql})`).run(id, ...params);
  const events = journalEvents(db).slice(before);
  expect(events).toHaveLength(1);
  const e = events[0] as JournalEvent;
  expect(e.op).toBe('insert');
  expect(e.after).toEqual(rowCells(db, 't', 'id = ?', [id]));
  return e;
}

/** Runs an update and returns the events it journaled. */
function update(db: Db, sql: string, params: readonly unknown[] = []): JournalEvent[] {
  const last = journalEvents(db).at(-1)?.seq ?? 0;
  db.prepare(sql).run(...params);
  return journalEvents(db, { sinceSeq: last });
}

describe('round-trip exactness', () => {
  test('int64 min and max keep every bit, and a change between them is journaled with both', ({ makeDb }) => {
    const db = setUp(makeDb);
    const min = -9223372036854775808n;
    const max = 9223372036854775807n;
    expect(insertAndCheck(db, 1, '?', [min]).after?.[1]).toBe(cell.int(min));
    expect(insertAndCheck(db, 2, '?', [max]).after?.[1]).toBe(cell.int(max));
    const [e] = update(db, 'UPDATE t SET v = ? WHERE id = 1', [max]);
    expect(e?.before?.[1]).toBe(cell.int(min));
    expect(e?.after?.[1]).toBe(cell.int(max));
    // max and max as REAL are equal numbers but different storage: an event.
    const [f] = update(db, 'UPDATE t SET v = CAST(v AS REAL) WHERE id = 2');
    expect(f?.before?.[1]).toBe(cell.int(max));
    expect(f?.after?.[1]).toBe(cell.real(9223372036854775807));
  });

  test("1, 1.0 and '1' in an untyped column are three different values", ({ makeDb }) => {
    const db = setUp(makeDb);
    expect(insertAndCheck(db, 1, '1').after?.[1]).toBe(cell.int(1));
    expect(insertAndCheck(db, 2, '1.0').after?.[1]).toBe(cell.real(1));
    expect(insertAndCheck(db, 3, "'1'").after?.[1]).toBe(cell.text('1'));

    // 1 -> 1.0 -> '1' -> 1: each step is an event, though 1 = 1.0 in SQL.
    const steps: [string, string, string][] = [
      ['1.0', cell.int(1), cell.real(1)],
      ["'1'", cell.real(1), cell.text('1')],
      ['1', cell.text('1'), cell.int(1)],
    ];
    for (const [to, from, after] of steps) {
      const events = update(db, `UPDATE t SET v = ${to} WHERE id = 1`);
      expect(events.map((e) => [e.op, e.before?.[1], e.after?.[1]])).toEqual([['update', from, after]]);
    }
  });

  test('REALs that need 17 significant digits are journaled with every bit', ({ makeDb }) => {
    const db = setUp(makeDb);
    const reals = [
      0.1 + 0.2,
      1 / 3,
      2 / 3,
      5e-324,
      -Number.MIN_VALUE,
      Number.MAX_VALUE,
      2 ** 53 + 2,
      123456789.12345679,
      -1.0000000000000002,
      Infinity,
      -Infinity,
    ];
    reals.forEach((x, i) => {
      expect(insertAndCheck(db, i + 1, '?', [x]).after?.[1]).toBe(cell.real(x));
    });
    // A one-ulp change is a change.
    const [e] = update(db, 'UPDATE t SET v = ? WHERE id = 1', [0.3]);
    expect(e?.before?.[1]).toBe(cell.real(0.30000000000000004));
    expect(e?.after?.[1]).toBe(cell.real(0.3));
    // Writing the very same 17-digit value is not.
    expect(update(db, 'UPDATE t SET v = ? WHERE id = 2', [1 / 3])).toEqual([]);
  });

  test('TEXT with malformed UTF-8 is journaled as its bytes, and two malformed texts that decode alike still differ', ({ makeDb }) => {
    const db = setUp(makeDb);
    expect(insertAndCheck(db, 1, "CAST(x'ff41' AS TEXT)").after?.[1]).toBe(cell.text(Buffer.from([0xff, 0x41])));
    // Both decode to "\uFFFDA" in JS; the bytes differ, so this is an event.
    const [e] = update(db, "UPDATE t SET v = CAST(x'fe41' AS TEXT) WHERE id = 1");
    expect(e?.before?.[1]).toBe(cell.text(Buffer.from([0xff, 0x41])));
    expect(e?.after?.[1]).toBe(cell.text(Buffer.from([0xfe, 0x41])));
    // The same bytes again: no event. The same bytes as a BLOB: an event.
    expect(update(db, "UPDATE t SET v = CAST(x'fe41' AS TEXT) WHERE id = 1")).toEqual([]);
    const [f] = update(db, "UPDATE t SET v = x'fe41' WHERE id = 1");
    expect(f?.after?.[1]).toBe(cell.blob(Buffer.from([0xfe, 0x41])));
  });

  test("'' and X'' and NULL are three different values, and moving between them is journaled", ({ makeDb }) => {
    const db = setUp(makeDb);
    expect(insertAndCheck(db, 1, "''").after?.[1]).toBe('text:');
    expect(insertAndCheck(db, 2, "X''").after?.[1]).toBe('blob:');
    expect(insertAndCheck(db, 3, 'NULL').after?.[1]).toBe('null:');
    const cycle: [string, string, string][] = [
      ["X''", 'text:', 'blob:'],
      ['NULL', 'blob:', 'null:'],
      ["''", 'null:', 'text:'],
    ];
    for (const [to, from, after] of cycle) {
      const events = update(db, `UPDATE t SET v = ${to} WHERE id = 1`);
      expect(events.map((e) => [e.before?.[1], e.after?.[1]])).toEqual([[from, after]]);
    }
    expect(update(db, "UPDATE t SET v = X'' WHERE id = 2")).toEqual([]);
    expect(update(db, 'UPDATE t SET v = NULL WHERE id = 3')).toEqual([]);
  });

  test('a 1 MB BLOB is journaled whole, and flipping one byte in it is an event', ({ makeDb }) => {
    const db = setUp(makeDb);
    const blob = randomBytes(1 << 20);
    expect(insertAndCheck(db, 1, '?', [blob]).after?.[1]).toBe(cell.blob(blob));
    expect(update(db, 'UPDATE t SET v = ? WHERE id = 1', [Buffer.from(blob)])).toEqual([]);
    const flipped = Buffer.from(blob);
    const mid = blob.length >> 1;
    flipped.writeUInt8(flipped.readUInt8(mid) ^ 0x01, mid);
    const [e] = update(db, 'UPDATE t SET v = ? WHERE id = 1', [flipped]);
    expect(e?.before?.[1]).toBe(cell.blob(blob));
    expect(e?.after?.[1]).toBe(cell.blob(flipped));
  });

  test('a NOCASE column changed only in case produces an event', ({ makeDb }) => {
    const db = setUp(makeDb);
    db.prepare("INSERT INTO t (id, n) VALUES (1, 'abc')").run();
    const events = update(db, "UPDATE t SET n = 'ABC' WHERE id = 1");
    expect(events.map((e) => [e.op, e.before?.[2], e.after?.[2]])).toEqual([['update', cell.text('abc'), cell.text('ABC')]]);
  });

  test('a NOCASE primary key changed only in case is one update carrying both keys', ({ makeDb }) => {
    const { db } = makeDb('k.db', 'CREATE TABLE k (name TEXT COLLATE NOCASE PRIMARY KEY NOT NULL, v)');
    enable(db, ['k']);
    db.exec("INSERT INTO k VALUES ('alice', 1)");
    db.exec("UPDATE k SET name = 'Alice' WHERE name = 'alice'");
    const events = journalEvents(db);
    expect(events.map((e) => [e.op, e.before, e.after])).toEqual([
      ['insert', undefined, [cell.text('alice'), cell.int(1)]],
      ['update', [cell.text('alice'), cell.int(1)], [cell.text('Alice'), cell.int(1)]],
    ]);
  });

  test('an update that changes no stored byte produces no event and leaves last_seq alone', ({ makeDb }) => {
    const db = setUp(makeDb);
    db.prepare("INSERT INTO t VALUES (1, 'same', 'Same', 1, 1.0)").run();
    // The table's last seq as sluice reads it (its row of _sluice_last is a checkpoint since format 4).
    const lastSeq = () => BigInt(status(db).tables.find((x) => x.name === 't')?.lastSeq ?? -1);
    const seqBefore = lastSeq();
    expect(seqBefore).toBe(1n);
    const noops = [
      'UPDATE t SET v = v, n = n, i = i, r = r',
      "UPDATE t SET v = 'same'",
      // Affinity makes these store exactly what is already there.
      'UPDATE t SET i = 1.0', // INTEGER column: 1.0 is stored as 1
      'UPDATE t SET r = 1', // REAL column: 1 is stored as 1.0
      "UPDATE t SET i = '1'", // INTEGER column: '1' is stored as 1
    ];
    for (const sql of noops) {
      const info = db.prepare(sql).run();
      expect(info.changes, sql).toBe(1); // the row was written...
      expect(journalEvents(db), sql).toHaveLength(1); // ...but nothing changed, so no event
    }
    expect(lastSeq()).toBe(seqBefore);
  });

  test('images of every column are in declared column order, for insert, update and delete', ({ makeDb }) => {
    const db = setUp(makeDb);
    db.prepare("INSERT INTO t VALUES (1, x'01', 'n', 7, 2.5)").run();
    const row1 = rowCells(db, 't', 'id = 1');
    db.prepare("UPDATE t SET v = 'w', i = 8 WHERE id = 1").run();
    const row2 = rowCells(db, 't', 'id = 1');
    db.prepare('DELETE FROM t WHERE id = 1').run();
    expect(row1).toEqual([cell.int(1), cell.blob(Buffer.from([1])), cell.text('n'), cell.int(7), cell.real(2.5)]);
    expect(journalEvents(db).map((e) => [e.op, e.before, e.after])).toEqual([
      ['insert', undefined, row1],
      ['update', row1, row2],
      ['delete', row2, undefined],
    ]);
  });
});
