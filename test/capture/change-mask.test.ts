import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { enable, anyChanged, anyChangedSql, decodeMask, encodeMask, maskBytes, maskFor } from '../../src/capture/index.ts';
import { readBatch, journalStartCursor } from '../../src/feed/index.ts';
import { pythonExec } from '../support/journal.ts';

/*
 * The changed-column mask the update trigger journals: one bit per column,
 * set by the same byte-wise test as the trigger's WHEN (storage class and
 * bytes, never a collation or numeric equality), an INTEGER up to 63
 * columns and an even-length BLOB past that, the same from every writer.
 */

/** Each journal row after `since`: op, the stored mask (hex of a BLOB, or the INTEGER), and its storage class. */
function masks(db: Db, since = 0): { op: number; type: string; mask: string | null }[] {
  return (
    db
      .prepare(
        "SELECT op, typeof(mask) AS type, CASE typeof(mask) WHEN 'blob' THEN hex(mask) ELSE mask END AS mask FROM _sluice_journal WHERE seq > ? ORDER BY seq",
      )
      .all(since) as { op: bigint; type: string; mask: string | bigint | null }[]
  ).map((r) => ({ op: Number(r.op), type: r.type, mask: r.mask === null ? null : String(r.mask) }));
}

/** The `changed` of each update the feed decodes after `cursor`, in order (undefined: not known). */
function changedOf(db: Db, cursor: string): (readonly string[] | undefined)[] {
  return readBatch(db, cursor)
    .events.filter((e) => e.op === 'update')
    .map((e) => (e.op === 'update' ? e.changed : undefined));
}

const hw = (db: Db) => Number(db.prepare('SELECT coalesce(max(seq), 0) FROM _sluice_journal').pluck().get());

describe('changed-column mask', () => {
  test('each storage-class edge sets exactly its column, and a write the no-op test drops journals nothing', ({ makeDb }) => {
    const { db } = makeDb(
      'edges.db',
      `CREATE TABLE t (id INTEGER PRIMARY KEY, a, b TEXT COLLATE NOCASE, c, d, e REAL, f INTEGER);
       INSERT INTO t VALUES (1, 1, 'a', NULL, X'', 1.0, 5);`,
    );
    enable(db, ['t']);
    const cursor = journalStartCursor(db);
    const from = hw(db);
    db.exec(`
      UPDATE t SET a = 1.0;            -- INTEGER 1 -> REAL 1.0: numerically equal, another storage class
      UPDATE t SET b = 'A';            -- equal under NOCASE, other bytes
      UPDATE t SET c = '';             -- NULL -> ''
      UPDATE t SET d = '';             -- X'' -> '': same (no) bytes, another storage class
      UPDATE t SET e = 1;              -- REAL affinity stores 1.0 again: no change, no event
      UPDATE t SET e = 0.0;            -- a change
      UPDATE t SET e = -0.0;           -- -0.0 IS 0.0, both REAL: no change, no event
      UPDATE t SET f = '5';            -- INTEGER affinity stores 5 again: no event
      UPDATE t SET b = 'A', c = '';    -- same bytes again: no event
      UPDATE t SET a = 2, f = 6;       -- two columns
      UPDATE t SET id = 10;            -- the key (an INTEGER PRIMARY KEY)
    `);
    expect(changedOf(db, cursor)).toEqual([['a'], ['b'], ['c'], ['d'], ['e'], ['a', 'f'], ['id']]);
    // An INTEGER with exactly those bits (columns in table order: id 0, a 1, ... f 6).
    expect(masks(db, from)).toEqual([
      { op: 2, type: 'integer', mask: String(1 << 1) },
      { op: 2, type: 'integer', mask: String(1 << 2) },
      { op: 2, type: 'integer', mask: String(1 << 3) },
      { op: 2, type: 'integer', mask: String(1 << 4) },
      { op: 2, type: 'integer', mask: String(1 << 5) },
      { op: 2, type: 'integer', mask: String((1 << 1) | (1 << 6)) },
      { op: 2, type: 'integer', mask: String(1 << 0) },
    ]);
  });

  test('a composite text key changed only in case is a key change; inserts and deletes carry no mask', ({ makeDb }) => {
    const { db } = makeDb(
      'key.db',
      `CREATE TABLE k (a TEXT COLLATE NOCASE NOT NULL, b INTEGER NOT NULL, v, PRIMARY KEY (a, b)) WITHOUT ROWID;`,
    );
    enable(db, ['k']);
    const cursor = journalStartCursor(db);
    db.exec(`INSERT INTO k VALUES ('x', 1, 'v'); UPDATE k SET a = 'X'; UPDATE k SET b = 2, v = 'w'; DELETE FROM k;`);
    const events = readBatch(db, cursor).events;
    expect(events.map((e) => [e.op, e.op === 'update' ? e.changed : 'none'])).toEqual([
      ['insert', 'none'],
      ['update', ['a']],
      ['update', ['b', 'v']],
      ['delete', 'none'],
    ]);
    expect(events.every((e) => e.op === 'update' || !('changed' in e))).toBe(true);
    expect(masks(db).map((m) => m.type)).toEqual(['null', 'integer', 'integer', 'null']);
  });

  test('the deletes a REPLACE journals (the guards, Python without recursive_triggers) have no mask; the update beside them has one', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('replace.db', `CREATE TABLE u (id INTEGER PRIMARY KEY, email TEXT UNIQUE, name TEXT);`);
    db.exec(`INSERT INTO u VALUES (1, 'a@x', 'Ann'), (2, 'b@x', 'Bob'), (3, 'c@x', 'Cy')`);
    enable(db, ['u']);
    const from = hw(db);
    const cursor = journalStartCursor(db);
    pythonExec(
      file,
      `INSERT OR REPLACE INTO u VALUES (1, 'a@x', 'Anna');
       UPDATE OR REPLACE u SET email = 'c@x' WHERE id = 2;`,
    );
    expect(masks(db, from)).toEqual([
      { op: 3, type: 'null', mask: null },
      { op: 1, type: 'null', mask: null },
      { op: 3, type: 'null', mask: null },
      { op: 2, type: 'integer', mask: String(1 << 1) },
    ]);
    expect(readBatch(db, cursor).events.map((e) => [e.op, e.op === 'update' ? e.changed : null])).toEqual([
      ['delete', null],
      ['insert', null],
      ['delete', null],
      ['update', ['email']],
    ]);
  });

  test('keys mode journals the mask of every column; counter mode journals none', ({ makeDb }) => {
    const { db } = makeDb('modes.db', `CREATE TABLE a (id INTEGER PRIMARY KEY, x, y); CREATE TABLE b (id INTEGER PRIMARY KEY, x, y);`);
    enable(db, ['a'], { mode: 'keys' });
    enable(db, ['b'], { mode: 'counter' });
    const cursor = journalStartCursor(db, ['a']);
    db.exec(`INSERT INTO a VALUES (1, 1, 1); INSERT INTO b VALUES (1, 1, 1); UPDATE a SET y = 2; UPDATE b SET y = 2;`);
    expect(changedOf(db, cursor)).toEqual([['y']]);
    expect(masks(db).map((m) => m.mask)).toEqual([null, null, String(1 << 2), null]);
  });
});

/** A table of n columns c0..c(n-1) besides its key `id` (column 0), one row. */
function wideTable(n: number): string {
  const cols = Array.from({ length: n - 1 }, (_, i) => `c${i}`);
  return `CREATE TABLE w (id INTEGER PRIMARY KEY, ${cols.join(', ')});
INSERT INTO w (id) VALUES (1);`;
}

/** One update per column but the key, each changing that column only, then one changing all of them. */
function wideWrites(n: number): string {
  const one = Array.from({ length: n - 1 }, (_, i) => `UPDATE w SET c${i} = ${i};`);
  const all = `UPDATE w SET ${Array.from({ length: n - 1 }, (_, i) => `c${i} = 'all ${i}'`).join(', ')};`;
  return [...one, all].join('\n');
}

/** The mask a write changing `columns` journals, as hex (BLOB) or decimal (INTEGER). */
function expected(n: number, changed: readonly string[]): string {
  const all = ['id', ...Array.from({ length: n - 1 }, (_, i) => `c${i}`)];
  const m = encodeMask(all, changed) as bigint | Uint8Array;
  return typeof m === 'bigint' ? m.toString() : Buffer.from(m).toString('hex').toUpperCase();
}

describe.each([63, 64, 100])('a table of %i columns', (n) => {
  const names = ['id', ...Array.from({ length: n - 1 }, (_, i) => `c${i}`)];
  const want = [...names.slice(1).map((c) => expected(n, [c])), expected(n, names.slice(1))];

  const writers = [
    ['better-sqlite3', 'UTF-8'],
    ['python', 'UTF-8'],
    ['sqlite3 CLI', 'UTF-8'],
    ['better-sqlite3', 'UTF-16le'],
    ['sqlite3 CLI', 'UTF-16be'],
  ] as const;
  for (const [writer, encoding] of writers)
    test(`${writer} (${encoding}) journals every bit exactly`, ({ makeDb, tmp }) => {
      runSqliteCli(path.join(tmp, 'w.db'), `PRAGMA encoding = '${encoding}';\n${wideTable(n)}`);
      const { db, file } = makeDb('w.db');
      expect(db.pragma('encoding', { simple: true })).toBe(encoding);
      enable(db, ['w']);
      const from = hw(db);
      const cursor = journalStartCursor(db);
      const sql = wideWrites(n);
      if (writer === 'python') pythonExec(file, sql);
      else if (writer === 'sqlite3 CLI') runSqliteCli(file, sql);
      else db.exec(sql);
      const got = masks(db, from);
      expect(got.map((m) => m.type)).toEqual(Array.from({ length: n }, () => (n <= 63 ? 'integer' : 'blob')));
      if (n > 63) expect(got.every((m) => (m.mask as string).length === 2 * maskBytes(n))).toBe(true);
      expect(got.map((m) => m.mask)).toEqual(want);
      expect(changedOf(db, cursor)).toEqual([...names.slice(1).map((c) => [c]), names.slice(1)]);
    });
});

test('decodeMask reads the bits of both layouts, and NULL as not known', () => {
  const cols = Array.from({ length: 70 }, (_, i) => `k${i}`);
  expect(decodeMask(null, cols)).toBeUndefined();
  expect(decodeMask(0b101n, cols.slice(0, 3))).toEqual(['k0', 'k2']);
  expect(decodeMask(1n << 62n, cols.slice(0, 63))).toEqual(['k62']);
  const blob = encodeMask(cols, ['k0', 'k9', 'k63', 'k69']) as Uint8Array;
  expect(blob.length).toBe(10);
  expect(decodeMask(blob, cols)).toEqual(['k0', 'k9', 'k63', 'k69']);
});

test('anyChanged and anyChangedSql agree with the journaled masks, bit by bit, for both layouts', ({ makeDb }) => {
  for (const n of [5, 100]) {
    const { db } = makeDb(`any${n}.db`, wideTable(n));
    enable(db, ['w']);
    const from = hw(db);
    db.exec(wideWrites(n));
    const names = ['id', ...Array.from({ length: n - 1 }, (_, i) => `c${i}`)];
    const rows = db.prepare('SELECT seq, mask FROM _sluice_journal WHERE seq > ? ORDER BY seq').all(from) as {
      seq: bigint;
      mask: bigint | Uint8Array;
    }[];
    // Event i (0-based) changed column c_i only; the last changed every column but the key.
    for (const probe of [1, 2, 9, n - 1].filter((p) => p < n)) {
      const read = maskFor(names, [names[probe] as string]);
      const js = rows.map((r) => anyChanged(r.mask, read));
      const sql = db
        .prepare(`SELECT ${anyChangedSql('mask', read)} FROM _sluice_journal WHERE seq > ? ORDER BY seq`)
        .pluck()
        .all(from)
        .map((v) => Number(v) === 1);
      const want = rows.map((_, i) => i === probe - 1 || i === rows.length - 1);
      expect([n, probe, js]).toEqual([n, probe, want]);
      expect([n, probe, sql]).toEqual([n, probe, want]);
    }
    expect(anyChanged(null, maskFor(names, ['id']))).toBe(true);
    expect(
      db
        .prepare(`SELECT ${anyChangedSql('NULL', maskFor(names, ['id']))}`)
        .pluck()
        .get(),
    ).toBe(1n);
  }
});
