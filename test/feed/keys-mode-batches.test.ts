// keys mode batches re read the current row by exact key
import { test, expect, describe } from '../support/fixtures.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { snapshot, readBatch } from '../../src/feed/index.ts';
import { RawText } from '../../src/sqlite/index.ts';
import { ReplayModel } from './support/replay.ts';

function setup(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, schema: string, table: string) {
  const { db } = makeDb('k.db', schema);
  enable(db, [table], { mode: 'keys' });
  const model = new ReplayModel();
  const snap = snapshot(db, [table], { onTable: (t) => model.table(t), onRow: (t, r) => model.snapshotRow(t, r) });
  return { db, model, cursor: snap.cursor };
}

describe('keys mode', () => {
  test('each event carries the key only, and after is the row as it is now (null once deleted)', ({ makeDb }) => {
    const { db, model, cursor } = setup(
      makeDb,
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v, b BLOB); INSERT INTO t VALUES (1, 'one', X'01'), (2, 'two', NULL)",
      't',
    );
    db.exec(`
      INSERT INTO t VALUES (3, 'three', X'');
      UPDATE t SET v = 'THREE' WHERE id = 3;
      INSERT INTO t VALUES (4, 'four', NULL);
      DELETE FROM t WHERE id = 4;
      UPDATE t SET v = 9223372036854775807 WHERE id = 1;
      DELETE FROM t WHERE id = 2;
      UPDATE t SET id = 10 WHERE id = 1;
    `);
    const b = readBatch(db, cursor);
    const summary = b.events.map((e) => ({
      op: e.op,
      image: e.image,
      key: e.key,
      before: e.before,
      after: e.after,
      ...(e.op === 'update' ? { beforeKey: e.beforeKey } : {}),
    }));
    expect(summary).toEqual([
      // The insert of 3 already shows the later update: rows are re-read in the batch's read transaction.
      { op: 'insert', image: 'key', key: [3n], before: null, after: { id: 3n, v: 'THREE', b: Buffer.alloc(0) } },
      { op: 'update', image: 'key', key: [3n], beforeKey: [3n], before: null, after: { id: 3n, v: 'THREE', b: Buffer.alloc(0) } },
      { op: 'insert', image: 'key', key: [4n], before: null, after: null },
      { op: 'delete', image: 'key', key: [4n], before: null, after: null },
      // Row 1 moved to key 10: re-reading key 1 finds nothing.
      { op: 'update', image: 'key', key: [1n], beforeKey: [1n], before: null, after: null },
      { op: 'delete', image: 'key', key: [2n], before: null, after: null },
      {
        op: 'update',
        image: 'key',
        key: [10n],
        beforeKey: [1n],
        before: null,
        after: { id: 10n, v: 9223372036854775807n, b: Buffer.from([1]) },
      },
    ]);
    for (const e of b.events) model.apply(e);
    expect(model.diff(db)).toEqual([]);
  });

  test('a malformed UTF-8 TEXT key is re-read by its bytes, not through the driver string', ({ makeDb }) => {
    const { db, model, cursor } = setup(makeDb, 'CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, v) WITHOUT ROWID', 't');
    const bad = Buffer.from([0x61, 0xff, 0xfe]);
    db.prepare("INSERT INTO t VALUES (CAST(? AS TEXT), 'first')").run(bad);
    db.prepare("INSERT INTO t VALUES (CAST(? AS TEXT), 'second')").run(Buffer.from([0x61, 0xff, 0xfd]));
    const b = readBatch(db, cursor);
    expect(b.events).toHaveLength(2);
    const [first] = b.events;
    expect(first?.key[0]).toBeInstanceOf(RawText);
    expect(Buffer.from((first?.key[0] as RawText).bytes)).toEqual(bad);
    expect(first?.after?.v).toBe('first');
    expect(Buffer.from((first?.after?.k as RawText).bytes)).toEqual(bad);
    for (const e of b.events) model.apply(e);
    expect(model.diff(db)).toEqual([]);
  });

  test('re-reading an old key never finds a different row through the column collation or numeric equality', ({ makeDb }) => {
    const { db, model, cursor } = setup(
      makeDb,
      "CREATE TABLE t (k TEXT COLLATE NOCASE PRIMARY KEY NOT NULL, v); INSERT INTO t VALUES ('abc', 1)",
      't',
    );
    // 'abc' -> 'ABC' is a real key change: key 'abc' no longer exists.
    db.exec("UPDATE t SET k = 'ABC' WHERE k = 'abc'");
    const b = readBatch(db, cursor);
    expect(b.events).toHaveLength(1);
    const e = b.events[0];
    expect(e?.op).toBe('update');
    expect(e?.key).toEqual(['ABC']);
    expect(e?.op === 'update' ? e.beforeKey : undefined).toEqual(['abc']);
    expect(e?.after).toEqual({ k: 'ABC', v: 1n });
    db.exec("INSERT INTO t VALUES ('xyz', 2); UPDATE t SET k = 'XYZ' WHERE k = 'xyz'");
    const b2 = readBatch(db, b.to);
    // The insert of 'xyz' re-reads key 'xyz': that row is gone (it is 'XYZ' now).
    expect(b2.events.map((x) => [x.op, x.key, x.after])).toEqual([
      ['insert', ['xyz'], null],
      ['update', ['XYZ'], { k: 'XYZ', v: 2n }],
    ]);
    for (const x of [...b.events, ...b2.events]) model.apply(x);
    expect(model.diff(db)).toEqual([]);
  });

  test('an untyped key changed from 1 to 1.0 re-reads as gone under the old key', ({ makeDb }) => {
    const { db, cursor } = setup(makeDb, 'CREATE TABLE t (k PRIMARY KEY NOT NULL, v); INSERT INTO t VALUES (1, 1)', 't');
    db.exec('INSERT INTO t VALUES (2, 2); UPDATE t SET k = 2.0 WHERE k = 2');
    const b = readBatch(db, cursor);
    expect(b.events.map((x) => [x.op, x.key, x.after])).toEqual([
      ['insert', [2n], null],
      ['update', [2], { k: 2, v: 2n }],
    ]);
  });
});
