// batches are bounded ordered contiguous and never hold a rolled back write
import { test, expect, describe } from '../support/fixtures.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { snapshot, readBatch, journalStartCursor, type Batch, decodeCursor } from '../../src/feed/index.ts';
import type { ChangeEvent } from '../../src/feed/index.ts';

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, v); CREATE TABLE u (k TEXT PRIMARY KEY NOT NULL, w)';

function setup(makeDb: (name?: string, schema?: string) => { db: Db; file: string }) {
  const { db, file } = makeDb('a.db', SCHEMA);
  enable(db, ['t', 'u']);
  const start = snapshot(db, ['t', 'u'], { onRow: () => {} }).cursor;
  return { db, file, start };
}

function mixedWrites(db: Db, n: number): void {
  const ins = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
  const upd = db.prepare('UPDATE t SET v = ? WHERE id = ?');
  const del = db.prepare('DELETE FROM t WHERE id = ?');
  const insU = db.prepare('INSERT INTO u (k, w) VALUES (?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= n; i++) {
      ins.run(i, i);
      if (i % 3 === 0) upd.run(`u${i}`, i - 1);
      if (i % 5 === 0) del.run(i - 2);
      if (i % 4 === 0) insU.run(`k${i}`, Buffer.from([i & 255]));
    }
  })();
}

function drain(db: Db, cursor: string, limit: number): { batches: Batch[]; events: ChangeEvent[]; to: string } {
  const batches: Batch[] = [];
  let at = cursor;
  for (;;) {
    const b = readBatch(db, at, { limit });
    batches.push(b);
    at = b.to;
    if (!b.hasMore) break;
  }
  return { batches, events: batches.flatMap((b) => b.events), to: at };
}

describe('readBatch', () => {
  test('respects limit, and seq strictly increases within and across consecutive batches', ({ makeDb }) => {
    const { db, start } = setup(makeDb);
    mixedWrites(db, 300);
    const { batches, events } = drain(db, start, 7);
    expect(batches.length).toBeGreaterThan(10);
    for (const b of batches) {
      expect(b.events.length).toBeLessThanOrEqual(7);
      if (b.hasMore) expect(b.events.length).toBe(7);
    }
    for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq);
    // Consecutive batches chain: each starts where the previous ended, and ends at its last event (or the high-water mark).
    for (let i = 1; i < batches.length; i++) {
      expect(batches[i]!.from).toBe(batches[i - 1]!.to);
      expect(batches[i]!.fromSeq).toBe(batches[i - 1]!.toSeq);
    }
    for (const b of batches) {
      const last = b.events.at(-1);
      if (b.hasMore) expect(b.toSeq).toBe(last?.seq);
      expect(b.events.every((e) => e.seq > b.fromSeq && e.seq <= b.toSeq)).toBe(true);
    }
  });

  test('continuing from `to` gives the next events with no gap and no overlap, whatever the limits', ({ makeDb }) => {
    const { db, start } = setup(makeDb);
    mixedWrites(db, 200);
    const all = readBatch(db, start, { limit: 1_000_000 });
    expect(all.hasMore).toBe(false);
    // Every seq from the snapshot to the high-water mark (nothing else is captured here).
    expect(all.events.map((e) => e.seq)).toEqual(Array.from({ length: all.toSeq - all.fromSeq }, (_, i) => all.fromSeq + 1 + i));
    for (const limit of [1, 2, 3, 50, 999]) {
      const { events } = drain(db, start, limit);
      expect(events.map((e) => e.seq)).toEqual(all.events.map((e) => e.seq));
      expect(events).toEqual(all.events);
    }
    // A batch read in the middle of writes continues seamlessly after them.
    const first = readBatch(db, all.to, { limit: 5 });
    expect(first.events).toEqual([]);
    expect(first.hasMore).toBe(false);
    expect(first.toSeq).toBe(all.toSeq);
    db.prepare('UPDATE t SET v = v || ? WHERE id IN (1, 2, 4)').run('!');
    const next = readBatch(db, first.to, { limit: 5 });
    expect(next.events.map((e) => e.seq)).toEqual([all.toSeq + 1, all.toSeq + 2, all.toSeq + 3]);
  });

  test('never includes a rolled-back transaction, savepoint or failed statement, nor a write still uncommitted', ({ makeDb }) => {
    const { db, file, start } = setup(makeDb);
    db.prepare("INSERT INTO t VALUES (1, 'kept')").run();
    // Whole transaction rolled back.
    db.exec("BEGIN; INSERT INTO t VALUES (2, 'rolled back'); UPDATE t SET v = 'rolled back' WHERE id = 1; ROLLBACK");
    // A savepoint rolled back inside a committed transaction.
    db.exec(
      "BEGIN; INSERT INTO t VALUES (3, 'kept'); SAVEPOINT s; INSERT INTO t VALUES (4, 'rolled back'); DELETE FROM t WHERE id = 1; ROLLBACK TO s; RELEASE s; COMMIT",
    );
    // A multi-row statement that fails half way: its first rows and their events are undone.
    expect(() => db.exec("INSERT INTO t VALUES (5, 'rolled back'), (6, 'rolled back'), (3, 'duplicate key')")).toThrow(/UNIQUE/);
    // Another connection holds an open, uncommitted write while we read.
    const other = openDatabase(file);
    other.exec("BEGIN IMMEDIATE; INSERT INTO t VALUES (7, 'uncommitted')");
    const during = readBatch(db, start, { limit: 100 });
    other.exec('ROLLBACK');
    other.close();
    db.prepare("INSERT INTO t VALUES (8, 'kept')").run();
    const after = readBatch(db, start, { limit: 100 });
    for (const b of [during, after]) {
      for (const e of b.events) {
        expect(JSON.stringify(e.after ?? e.before, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).not.toMatch(
          /rolled back|uncommitted|duplicate/,
        );
      }
    }
    expect(during.events.map((e) => [e.op, e.key])).toEqual([
      ['insert', [1n]],
      ['insert', [3n]],
    ]);
    expect(after.events.map((e) => [e.op, e.key])).toEqual([
      ['insert', [1n]],
      ['insert', [3n]],
      ['insert', [8n]],
    ]);
    // The batch read during the open write ended at what was committed then; continuing picks up exactly the rest.
    const rest = readBatch(db, during.to, { limit: 100 });
    expect(rest.events.map((e) => e.key)).toEqual([[8n]]);
  });

  test('a table subset reads only those tables, and its `to` covers only them', ({ makeDb }) => {
    const { db, start } = setup(makeDb);
    mixedWrites(db, 40);
    const onlyU = readBatch(db, start, { tables: ['u'], limit: 1000 });
    expect(onlyU.events.length).toBe(10);
    expect(onlyU.events.every((e) => e.table === 'u')).toBe(true);
    expect(decodeCursor(onlyU.to).tables).toEqual(['u']);
    const both = readBatch(db, start, { limit: 1000 });
    expect(both.events.filter((e) => e.table === 'u')).toEqual(onlyU.events);
    expect(() => readBatch(db, onlyU.to, { tables: ['t'] })).toThrow(expect.objectContaining({ code: 'TABLE_NOT_IN_CURSOR' }));
  });

  test('rejects a limit that is not a whole number >= 1', ({ makeDb }) => {
    const { db, start } = setup(makeDb);
    for (const limit of [0, -1, 1.5, Number.NaN])
      expect(() => readBatch(db, start, { limit })).toThrow(expect.objectContaining({ code: 'BAD_LIMIT' }));
  });

  test('the journal start cursor lists every retained event from the first seq', ({ makeDb }) => {
    const { db } = setup(makeDb);
    mixedWrites(db, 20);
    const start = journalStartCursor(db);
    expect(decodeCursor(start).seq).toBe(0);
    const b = readBatch(db, start, { limit: 3 });
    expect(b.events.map((e) => e.seq)).toEqual([1, 2, 3]);
  });
});
