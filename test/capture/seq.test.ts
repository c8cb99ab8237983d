import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { enable, disable, bump, status } from '../../src/capture/index.ts';
import { journalEvents, cell } from '../support/journal.ts';
import type { Db } from '../../src/sqlite/index.ts';

/* A seq is never reused and never goes backwards. */

const seqs = (db: Db) => (db.prepare('SELECT seq FROM _sluice_journal ORDER BY seq').all() as { seq: bigint }[]).map((r) => Number(r.seq));
const prunedThrough = (db: Db) => Number((db.prepare('SELECT pruned_through AS p FROM _sluice_state').get() as { p: bigint }).p);

function insertRows(db: Db, from: number, to: number): void {
  const ins = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
  db.transaction(() => {
    for (let i = from; i <= to; i++) ins.run(i, `v${i}`);
  })();
}

describe('seq', () => {
  test('pruning inside writers’ transactions removes most of the journal, records pruned_through, keeps the newest event, and the next seq is max+1', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('p.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(db, ['t'], { retention: 1024 });
    insertRows(db, 1, 3500);
    // Prunes run at every multiple of 16; the last was at 3488 (<= 3488 - 1024).
    expect(prunedThrough(db)).toBe(2464);
    let s = seqs(db);
    expect(s[0]).toBe(2465);
    expect(s.at(-1)).toBe(3500);
    expect(s).toHaveLength(3500 - 2464);
    expect(status(db)).toMatchObject({ seq: 3500, prunedThrough: 2464, retention: 1024, journalRows: 1036 });
    expect(journalEvents(db, { sinceSeq: 3499 }).map((e) => e.after)).toEqual([[cell.int(3500), cell.text('v3500')]]);

    // An external writer crosses more prune boundaries (the last at 4096) in its own transaction.
    runPython(
      `
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
with conn:
    conn.executemany('INSERT INTO t (id, v) VALUES (?, ?)', [(i, 'py%d' % i) for i in range(3501, 4101)])
`,
      [file],
    );
    expect(prunedThrough(db)).toBe(4096 - 1024);
    s = seqs(db);
    expect(s[0]).toBe(3073);
    expect(s.at(-1)).toBe(4100);
    expect(s.every((v, i) => i === 0 || v === (s[i - 1] as number) + 1)).toBe(true);
    db.prepare("INSERT INTO t (id, v) VALUES (5000, 'next')").run();
    expect(seqs(db).at(-1)).toBe(4101);
  });

  test('lowering retention through enable prunes at once, and seq continues after the survivors', ({ makeDb }) => {
    const { db } = makeDb('p.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(db, ['t']);
    insertRows(db, 1, 3000);
    expect(prunedThrough(db)).toBe(0);
    enable(db, ['t'], { retention: 1024 });
    expect(prunedThrough(db)).toBe(3000 - 1024);
    expect(seqs(db)[0]).toBe(3000 - 1024 + 1);
    expect(status(db)).toMatchObject({ seq: 3000, prunedThrough: 1976, retention: 1024 });
    db.prepare("INSERT INTO t (id, v) VALUES (9999, 'x')").run();
    expect(seqs(db).at(-1)).toBe(3001);
  });

  test('INSERT OR FAIL that fails midway commits its earlier rows with their events, and later seqs continue after them', ({ makeDb }) => {
    const { db } = makeDb('f.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, v UNIQUE); INSERT INTO t VALUES (1, 'dup');");
    enable(db, ['t']);
    db.exec("INSERT INTO t VALUES (2, 'a')"); // seq 1
    expect(() => db.exec("INSERT OR FAIL INTO t VALUES (3, 'b'), (4, 'c'), (5, 'dup'), (6, 'd')")).toThrow(/UNIQUE/);
    expect(db.inTransaction).toBe(false);
    expect(
      db
        .prepare('SELECT id FROM t ORDER BY id')
        .all()
        .map((r) => Number((r as { id: bigint }).id)),
    ).toEqual([1, 2, 3, 4]);
    expect(journalEvents(db).map((e) => [e.seq, e.after?.[0]])).toEqual([
      [1, cell.int(2)],
      [2, cell.int(3)],
      [3, cell.int(4)],
    ]);
    db.exec("INSERT INTO t VALUES (7, 'e')");
    expect(seqs(db)).toEqual([1, 2, 3, 4]);
    expect(status(db).seq).toBe(4);
  });

  test('UPDATE OR FAIL from Python that fails midway keeps the events of the rows it changed, and seq continues', ({ makeDb }) => {
    const { db, file } = makeDb(
      'f.db',
      'CREATE TABLE t (id INTEGER PRIMARY KEY, v UNIQUE); INSERT INTO t VALUES (1, 10), (2, 20), (3, 30), (4, 40);',
    );
    enable(db, ['t']);
    // Rows are visited in id order: 1 -> 11, 2 -> 21, then 3 -> 40 collides with row 4.
    const out = runPython(
      `
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
try:
    conn.execute('UPDATE OR FAIL t SET v = CASE id WHEN 3 THEN 40 ELSE v + 1 END')
except sqlite3.IntegrityError as e:
    print('failed:', e)
conn.execute('INSERT INTO t VALUES (5, 50)')
`,
      [file],
    );
    expect(out).toMatch(/failed: UNIQUE/);
    expect(journalEvents(db).map((e) => [e.seq, e.op, e.before?.[1], e.after?.[1]])).toEqual([
      [1, 'update', cell.int(10), cell.int(11)],
      [2, 'update', cell.int(20), cell.int(21)],
      [3, 'insert', undefined, cell.int(50)],
    ]);
  });

  test('bump and re-arm never move seq back; disable then enable starts a new sourceId so no (sourceId, seq) repeats', ({ makeDb }) => {
    const { db } = makeDb('d.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    const seen = new Set<string>();
    const record = () => {
      const s = status(db);
      for (const q of seqs(db)) {
        const key = `${s.sourceId}:${q}`;
        expect(seen.has(key), key).toBe(false);
        seen.add(key);
      }
      return s;
    };
    const first = enable(db, ['t']);
    insertRows(db, 1, 5);
    const a = record();
    expect(a.seq).toBe(5);

    bump(db, 'test');
    db.exec('DROP TRIGGER _sluice_t1_ins');
    expect(enable(db, []).rearmed).toEqual(['t']);
    db.exec("INSERT INTO t VALUES (6, 'after re-arm')");
    const b = status(db);
    expect(b.sourceId).toBe(a.sourceId);
    expect(b.generation).toBe(first.generation + 2);
    expect(b.seq).toBe(6);
    expect(seqs(db)).toEqual([1, 2, 3, 4, 5, 6]);
    seen.clear();
    record();

    disable(db);
    const again = enable(db, ['t']);
    expect(again.created).toBe(true);
    expect(again.sourceId).not.toBe(first.sourceId);
    expect(again.generation).toBe(1);
    insertRows(db, 7, 12);
    const c = record(); // throws if any (sourceId, seq) pair was seen before
    expect(c.sourceId).toBe(again.sourceId);
    expect(c.seq).toBeGreaterThan(0);
  });
});
