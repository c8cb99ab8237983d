// updates since yields the latest change per row
import { test, expect, describe } from '../support/fixtures.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { enable, status, disable } from '../../src/capture/index.ts';
import {
  snapshot,
  journalStartCursor,
  decodeCursor,
  encodeCursor,
  updatesSince,
  updatesPage,
  type RowChange,
} from '../../src/feed/index.ts';
import { RawText } from '../../src/sqlite/index.ts';
import { FailClosedError } from '../../src/errors.ts';
import { canonKey } from './support/replay.ts';

function setup(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, mode: 'images' | 'keys' = 'images') {
  const { db } = makeDb(
    'u.db',
    "CREATE TABLE dogs (id INTEGER PRIMARY KEY, name TEXT, age INTEGER); INSERT INTO dogs VALUES (1, 'Cleo', 5), (2, 'Pancakes', 4), (3, 'Fido', 9)",
  );
  enable(db, ['dogs'], { mode });
  return db;
}

/** A cursor at the current high-water mark, covering `table`. */
function cursorOf(db: Db, table = 'dogs'): string {
  return snapshot(db, [table], { onRow: () => {} }).cursor;
}

const brief = (c: RowChange) => ({ pks: c.pks, row: c.row, deleted: c.deleted });

describe.each(['images', 'keys'] as const)('updatesSince (%s mode)', (mode) => {
  test('yields one change per row, the latest, with the current row or null when deleted', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    const since = cursorOf(db);
    const seq = status(db).seq;
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
    expect(changes.map((c) => c.version)).toEqual([seq + 2, seq + 4, seq + 6, seq + 7]);
    for (const c of changes) expect(Math.abs((c.updatedMs as number) - Date.now())).toBeLessThan(60_000);
  });

  test('a key change yields the old key deleted and the new key present', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    const since = cursorOf(db);
    db.exec('UPDATE dogs SET id = 20 WHERE id = 2');
    const changes = [...updatesSince(db, 'dogs', since)];
    expect(changes.map(brief).sort((a, b) => Number(a.pks[0]) - Number(b.pks[0]))).toEqual([
      { pks: [2n], row: null, deleted: true },
      { pks: [20n], row: { id: 20n, name: 'Pancakes', age: 4n }, deleted: false },
    ]);
  });

  test('pages internally: every batch size yields the same changes, each row once, in version order', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    const since = cursorOf(db);
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
    expect(
      all
        .filter((c) => !c.deleted)
        .map((c) => canonKey(c.pks))
        .sort(),
    ).toEqual(present);
    expect(all.filter((c) => c.deleted).every((c) => c.row === null)).toBe(true);
    for (const batchSize of [1, 2, 3, 7, 64]) {
      const paged = [...updatesSince(db, 'dogs', since, { batchSize })];
      expect(paged.map((c) => canonKey(c.pks)).sort(), `batchSize ${batchSize}`).toEqual([...keys].sort());
      for (let i = 1; i < paged.length; i++) expect(paged[i]!.version).toBeGreaterThanOrEqual(paged[i - 1]!.version);
    }
  });

  test('without since it reads every current row first (also rows older than capture), then the changes after it', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    const full = [...updatesSince(db, 'dogs')];
    expect(full.map(brief)).toEqual([
      { pks: [1n], row: { id: 1n, name: 'Cleo', age: 5n }, deleted: false },
      { pks: [2n], row: { id: 2n, name: 'Pancakes', age: 4n }, deleted: false },
      { pks: [3n], row: { id: 3n, name: 'Fido', age: 9n }, deleted: false },
    ]);
    expect(full.map((c) => c.updatedMs)).toEqual([null, null, null]);
    // Only the last row of the full read is a place to continue from.
    expect(full.map((c) => c.cursor === undefined)).toEqual([true, true, false]);
    expect([...updatesSince(db, 'dogs', full[2]?.cursor)]).toEqual([]);
  });

  test('a full read in pages misses nothing written between its pages: later changes follow it, and the end state is the table', ({
    makeDb,
  }) => {
    const db = setup(makeDb, mode);
    const seen = new Map<string, RowChange>();
    const it = updatesSince(db, 'dogs', undefined, { batchSize: 1 });
    const first = it.next().value as RowChange;
    seen.set(canonKey(first.pks), first);
    // Between pages: change a row already read, delete one not yet read, add one.
    db.exec("UPDATE dogs SET name = 'Cleo2' WHERE id = 1; DELETE FROM dogs WHERE id = 3; INSERT INTO dogs VALUES (0, 'Zero', 1)");
    for (let r = it.next(); r.done !== true; r = it.next()) seen.set(canonKey(r.value.pks), r.value);
    const present = [...seen.values()]
      .filter((c) => !c.deleted)
      .map((c) => c.row)
      .sort((a, b) => Number(a?.id) - Number(b?.id));
    expect(present).toEqual(db.prepare('SELECT * FROM dogs ORDER BY id').all());
    expect(seen.get(canonKey([3n]))?.deleted).toBe(true);
  });

  test('a full read whose source is re-created between its pages refuses with SOURCE_CHANGED, never a mix', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    const it = updatesSince(db, 'dogs', undefined, { batchSize: 1 });
    it.next();
    disable(db);
    enable(db, ['dogs'], { mode });
    expect(() => it.next()).toThrow(expect.objectContaining({ code: 'SOURCE_CHANGED', exitCode: 3 }));
  });

  test("each change's cursor continues after it: nothing repeats, later changes follow, and the return value is the end", ({ makeDb }) => {
    const db = setup(makeDb, mode);
    const since = cursorOf(db);
    db.exec("UPDATE dogs SET age = 10 WHERE id = 1; INSERT INTO dogs VALUES (7, 'Max', 2)");
    const first = [...updatesSince(db, 'dogs', since)];
    const next = first.at(-1)?.cursor as string;
    expect(decodeCursor(next).seq).toBe(Math.max(...first.map((c) => c.version)));
    expect([...updatesSince(db, 'dogs', next)]).toEqual([]);
    db.exec('UPDATE dogs SET age = 3 WHERE id = 7');
    expect([...updatesSince(db, 'dogs', next)].map(brief)).toEqual([{ pks: [7n], row: { id: 7n, name: 'Max', age: 3n }, deleted: false }]);
    // DDL sluice did not make (the CREATE TABLE) opens a schema window: a cursor from before it rebuilds.
    db.exec('CREATE TABLE cats (id INTEGER PRIMARY KEY)');
    enable(db, ['cats']);
    expect(() => [...updatesSince(db, 'dogs', next)]).toThrow(expect.objectContaining({ code: 'SCHEMA_WINDOW' }));
    // Writes to another table move the high-water mark: the return value (and updatesPage's cursor) follows it.
    const after = cursorOf(db);
    db.exec('INSERT INTO cats VALUES (1)');
    const cats = cursorOf(db, 'cats');
    const it = updatesSince(db, 'dogs', after);
    const end = it.next();
    expect(end.done).toBe(true);
    expect(decodeCursor(end.value as string).seq).toBe(status(db).seq);
    expect(updatesPage(db, 'dogs', after)).toMatchObject({ hasMore: false });
    expect(decodeCursor(updatesPage(db, 'dogs', after).cursor).seq).toBe(status(db).seq);
    // A cursor must cover the table it is asked about.
    expect(() => [...updatesSince(db, 'dogs', cats)]).toThrow(expect.objectContaining({ code: 'TABLE_NOT_IN_CURSOR' }));
  });

  test('stopping after any change and continuing from its cursor, even between the two keys of a key change, ends at the source', ({
    makeDb,
  }) => {
    const db = setup(makeDb, mode);
    const since = cursorOf(db);
    db.exec(
      'UPDATE dogs SET id = 20 WHERE id = 2; UPDATE dogs SET age = 1 WHERE id = 1; UPDATE dogs SET id = 30 WHERE id = 3; DELETE FROM dogs WHERE id = 1',
    );
    const all = [...updatesSince(db, 'dogs', since, { batchSize: 1 })];
    for (let stop = 0; stop < all.length; stop++) {
      const seen = new Map<string, RowChange>();
      for (const c of all.slice(0, stop + 1)) seen.set(canonKey(c.pks), c);
      for (const c of updatesSince(db, 'dogs', all[stop]?.cursor, { batchSize: 1 })) seen.set(canonKey(c.pks), c);
      const present = [...seen.values()]
        .filter((c) => !c.deleted)
        .map((c) => c.row)
        .sort((a, b) => Number(a?.id) - Number(b?.id));
      expect(present, `stopped after change ${stop}`).toEqual([
        { id: 20n, name: 'Pancakes', age: 4n },
        { id: 30n, name: 'Fido', age: 9n },
      ]);
      expect(
        [...seen.values()]
          .filter((c) => c.deleted)
          .map((c) => c.pks[0])
          .sort(),
        `stopped after change ${stop}`,
      ).toEqual([1n, 2n, 3n]);
    }
  });

  test('a cursor below the pruned horizon is refused (CURSOR_PRUNED), not a silent gap', ({ makeDb }) => {
    const db = setup(makeDb, mode);
    enable(db, [], { retention: 1024 });
    const ins = db.prepare('INSERT INTO dogs (id, name, age) VALUES (?, ?, 0) ON CONFLICT (id) DO UPDATE SET age = age + 1');
    db.transaction(() => {
      for (let i = 0; i < 2500; i++) ins.run(100 + (i % 50), 'x');
    })();
    const pruned = status(db).prunedThrough;
    expect(pruned).toBeGreaterThan(0);
    const start = journalStartCursor(db, ['dogs']);
    const below = encodeCursor({ ...decodeCursor(start), seq: pruned - 1 });
    expect(() => [...updatesSince(db, 'dogs', below)]).toThrow(FailClosedError);
    expect(() => [...updatesSince(db, 'dogs', below)]).toThrow(
      expect.objectContaining({ code: 'CURSOR_PRUNED', detail: { rebuild: 'CURSOR_PRUNED' } }),
    );
    expect([...updatesSince(db, 'dogs', start)].length).toBe(50);
    expect(() => [...updatesSince(db, 'dogs', -1 as never)]).toThrow(expect.objectContaining({ code: 'CURSOR_REQUIRED' }));
  });
});

describe('updatesSince with keys that collation or the driver would blur', () => {
  test('malformed UTF-8 keys come back as exact bytes, and their rows are found', ({ makeDb }) => {
    const { db } = makeDb('u.db', 'CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, v) WITHOUT ROWID');
    enable(db, ['t']);
    const since = cursorOf(db, 't');
    const bad = Buffer.from([0x6b, 0xff]);
    db.prepare("INSERT INTO t VALUES (CAST(? AS TEXT), 'v')").run(bad);
    // From the journal, and from the full read.
    for (const [c] of [[...updatesSince(db, 't', since)], [...updatesSince(db, 't')]]) {
      expect(c?.pks[0]).toBeInstanceOf(RawText);
      expect(Buffer.from((c?.pks[0] as RawText).bytes)).toEqual(bad);
      expect(c?.deleted).toBe(false);
      expect(Buffer.from((c?.row?.k as RawText).bytes)).toEqual(bad);
      expect(c?.row?.v).toBe('v');
    }
  });

  test("a NOCASE key changed from 'abc' to 'ABC' reports 'abc' deleted", ({ makeDb }) => {
    const { db } = makeDb('u.db', "CREATE TABLE t (k TEXT COLLATE NOCASE PRIMARY KEY NOT NULL, v); INSERT INTO t VALUES ('abc', 1)");
    enable(db, ['t']);
    const since = cursorOf(db, 't');
    db.exec("UPDATE t SET k = 'ABC'");
    const changes = [...updatesSince(db, 't', since)].map(brief).sort((a, b) => (String(a.pks[0]) < String(b.pks[0]) ? -1 : 1));
    expect(changes).toEqual([
      { pks: ['ABC'], row: { k: 'ABC', v: 1n }, deleted: false },
      { pks: ['abc'], row: null, deleted: true },
    ]);
  });
});
