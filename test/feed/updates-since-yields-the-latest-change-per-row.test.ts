import { test, expect, describe } from '../support/fixtures.ts';
import type { Db } from '../../src/sqlite/connection.ts';
import { enable } from '../../src/capture/enable.ts';
import { status } from '../../src/capture/status.ts';
import { updatesSince, type RowChange } from '../../src/feed/updates-since.ts';
import { RawText } from '../../src/sqlite/codec.ts';
import { FailClosedError } from '../../src/errors.ts';
import { canonKey } from './support/replay.ts';

function setup(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, mode: 'images' | 'keys' = 'images') {
  const { db } = makeDb('u.db', "CREATE TABLE dogs (id INTEGER PRIMARY KEY, name TEXT, age INTEGER); INSERT INTO dogs VALUES (1, 'Cleo', 5), (2, 'Pancakes', 4), (3, 'Fido', 9)");
  enable(db, ['dogs'], { mode });
  return db;
}

const brief = (c: RowChange) => ({ pks: c.pks, row: c.row, deleted: c.deleted });

describe.each(['images', 'keys'] as const)('updatesSince (%s mode)', (mode) => {
  test('yields one change per row, the latest, with the current row or null when deleted', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    const since = status(db).seq;
    db.exec(`
      UPDATE dogs SET age = 6 WHERE id = 1;
      UPDATE dogs SET age = 7 WHERE id = 1;
      INSERT INTO dogs VALUES (4, 'Rex', 1);
      DELETE FROM dogs WHERE id = 3;
      INSERT INTO dogs VALUES (5, 'Tmp', 0);
      DELETE FROM dogs WHERE id = 5;
      UPDATE dogs SET name = 'Rexy' WHERE id = 4;
    `);
    const changes = [...updatesSince(db, 'dogs', since)];
    expect(changes.map(brief)).toEqual([
      { pks: [1n], row: { id: 1n, name: 'Cleo', age: 7n }, deleted: false },
      { pks: [3n], row: null, deleted: true },
      { pks: [5n], row: null, deleted: true },
      { pks: [4n], row: { id: 4n, name: 'Rexy', age: 1n }, deleted: false },
    ]);
    expect(changes.map((c) => c.version)).toEqual([since + 2, since + 4, since + 6, since + 7]);
    for (const c of changes) expect(Math.abs(c.updatedMs - Date.now())).toBeLessThan(60_000);
  });

  test('a key change yields the old key deleted and the new key present', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    const since = status(db).seq;
    db.exec('UPDATE dogs SET id = 20 WHERE id = 2');
    const changes = [...updatesSince(db, 'dogs', since)];
    expect(changes.map(brief).sort((a, b) => Number(a.pks[0]) - Number(b.pks[0]))).toEqual([
      { pks: [2n], row: null, deleted: true },
      { pks: [20n], row: { id: 20n, name: 'Pancakes', age: 4n }, deleted: false },
    ]);
  });

  test('pages internally: every batch size yields the same changes, each row once, in version order', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    const since = status(db).seq;
    const ins = db.prepare('INSERT INTO dogs (id, name, age) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let i = 10; i < 60; i++) ins.run(i, `dog${i}`, i);
      for (let i = 10; i < 60; i += 3) db.prepare('UPDATE dogs SET age = age + 1 WHERE id = ?').run(i);
      // Key changes: each puts two rows (old key, new key) at one version, also across page boundaries.
      for (let i = 11; i < 60; i += 4) db.prepare('UPDATE dogs SET id = ? WHERE id = ?').run(i + 1000, i);
      for (let i = 12; i < 60; i += 5) db.prepare('DELETE FROM dogs WHERE id = ?').run(i);
    })();
    const all = [...updatesSince(db, 'dogs', since, { batchSize: 100_000 })];
    const keys = all.map((c) => canonKey(c.pks));
    expect(new Set(keys).size).toBe(keys.length);
    // Exactly the rows that exist now are present; every other touched key is deleted.
    const present = (db.prepare('SELECT id FROM dogs WHERE id >= 10').pluck().all() as bigint[]).map((id) => canonKey([id])).sort();
    expect(all.filter((c) => !c.deleted).map((c) => canonKey(c.pks)).sort()).toEqual(present);
    expect(all.filter((c) => c.deleted).every((c) => c.row === null)).toBe(true);
    for (const batchSize of [1, 2, 3, 7, 64]) {
      const paged = [...updatesSince(db, 'dogs', since, { batchSize })];
      expect(paged.map((c) => canonKey(c.pks)).sort(), `batchSize ${batchSize}`).toEqual([...keys].sort());
      for (let i = 1; i < paged.length; i++) expect(paged[i]!.version).toBeGreaterThanOrEqual(paged[i - 1]!.version);
    }
  });

  test('the highest version seen is the next since: nothing repeats, later changes follow', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    db.exec("UPDATE dogs SET age = 10 WHERE id = 1; INSERT INTO dogs VALUES (7, 'Max', 2)");
    const first = [...updatesSince(db, 'dogs', 0)];
    const next = Math.max(...first.map((c) => c.version));
    expect([...updatesSince(db, 'dogs', next)]).toEqual([]);
    db.exec('UPDATE dogs SET age = 3 WHERE id = 7');
    expect([...updatesSince(db, 'dogs', next)].map(brief)).toEqual([{ pks: [7n], row: { id: 7n, name: 'Max', age: 3n }, deleted: false }]);
  });

  test('a version below the pruned horizon is an error (CURSOR_PRUNED), not a silent gap', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    enable(db, [], { retention: 1024 });
    const ins = db.prepare('INSERT INTO dogs (id, name, age) VALUES (?, ?, 0) ON CONFLICT (id) DO UPDATE SET age = age + 1');
    db.transaction(() => {
      for (let i = 0; i < 2500; i++) ins.run(100 + (i % 50), 'x');
    })();
    const pruned = status(db).prunedThrough;
    expect(pruned).toBeGreaterThan(0);
    expect(() => [...updatesSince(db, 'dogs', pruned - 1)]).toThrow(FailClosedError);
    expect(() => [...updatesSince(db, 'dogs', pruned - 1)]).toThrow(expect.objectContaining({ code: 'CURSOR_PRUNED' }));
    expect([...updatesSince(db, 'dogs', pruned)].length).toBe(50);
    expect(() => [...updatesSince(db, 'dogs', -1)]).toThrow(expect.objectContaining({ code: 'BAD_VERSION' }));
  });
});

describe('updatesSince with keys that collation or the driver would blur', () => {
  test('malformed UTF-8 keys come back as exact bytes, and their rows are found', ({ makeDb }) => {
    const { db } = makeDb('u.db', 'CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, v) WITHOUT ROWID');
    enable(db, ['t']);
    const bad = Buffer.from([0x6b, 0xff]);
    db.prepare("INSERT INTO t VALUES (CAST(? AS TEXT), 'v')").run(bad);
    const [c] = [...updatesSince(db, 't', 0)];
    expect(c?.pks[0]).toBeInstanceOf(RawText);
    expect(Buffer.from((c?.pks[0] as RawText).bytes)).toEqual(bad);
    expect(c?.deleted).toBe(false);
    expect(c?.row?.v).toBe('v');
  });

  test("a NOCASE key changed from 'abc' to 'ABC' reports 'abc' deleted", ({ makeDb }) => {
    const { db } = makeDb('u.db', "CREATE TABLE t (k TEXT COLLATE NOCASE PRIMARY KEY NOT NULL, v); INSERT INTO t VALUES ('abc', 1)");
    enable(db, ['t']);
    db.exec("UPDATE t SET k = 'ABC'");
    const changes = [...updatesSince(db, 't', 0)].map(brief).sort((a, b) => (String(a.pks[0]) < String(b.pks[0]) ? -1 : 1));
    expect(changes).toEqual([
      { pks: ['ABC'], row: { k: 'ABC', v: 1n }, deleted: false },
      { pks: ['abc'], row: null, deleted: true },
    ]);
  });
});
