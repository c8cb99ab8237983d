// a long follow session reuses its work tables and statements and stays exact
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import type { Db } from '../../../src/sqlite/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { prng } from '../../../fixtures/tracker.ts';
import { highWater, makeSource, tableCells } from '../support/target.ts';

/*
 * A follower keeps one session for hours: the apply paths' TEMP work tables
 * and compiled statements outlive each batch (src/sqlite/work-tables.ts,
 * statement-cache.ts), and the databases are memory-mapped only while it
 * catches up (ApplySession.memoryMap). These tests hold one Syncer across
 * many small batches, with a batch rolled back in the middle.
 */

/** Between batches the work tables are kept, and empty (their pages free for the next table). */
function expectEmptyWorkTables(db: Db): void {
  const work = db
    .prepare("SELECT name FROM temp.sqlite_schema WHERE type = 'table' AND name LIKE '\\_sluice\\_%' ESCAPE '\\'")
    .pluck()
    .all() as string[];
  expect(work.length).toBeGreaterThan(0);
  for (const name of work) expect([name, db.prepare(`SELECT count(*) FROM temp."${name}"`).pluck().get()]).toEqual([name, 0n]);
}

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE, n INTEGER, b BLOB)';
const PROJECTIONS = [
  { name: 't', source: 't', kind: 'mirror' as const },
  {
    name: 'tmap',
    source: 't',
    kind: 'map' as const,
    columns: { id: 'id', label: 'name', len: { expr: 'length(name)', type: 'TEXT' } },
    filter: 'n % 3 <> 0',
  },
  { name: 'tfts', source: 't', kind: 'fts5' as const, columns: ['name'], content: 'external' as const },
];

test('one session over 120 small batches (inserts, updates, key changes, deletes), with the mirror suspended by a tampered row halfway: map and fts5 stay equal to the source, the mirror stops exactly at the tampered batch', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t']);
  const target = path.join(tmp, 'target.db');
  const rand = prng(7);
  const ins = src.db.prepare('INSERT INTO t VALUES (?, ?, ?, ?)');
  for (let i = 1; i <= 40; i++) ins.run(i, `row ${i}`, i, Buffer.from([i]));
  const s = await Syncer.open(src.file, target, { projections: PROJECTIONS });
  try {
    await s.runOnce();
    let next = 41;
    let tampered = false;
    let beforeTamper = 0;
    for (let round = 0; round < 120; round++) {
      const roundStart = highWater(src.db);
      const ids = (src.db.prepare('SELECT id FROM t').pluck().all() as bigint[]).map(Number);
      const pick = () => ids[Math.floor(rand() * ids.length)] as number;
      const x = rand();
      if (x < 0.35 || ids.length < 5) ins.run(next, `Row ${next++}`, Math.floor(rand() * 100), Buffer.from([round]));
      else if (x < 0.7)
        src.db.prepare('UPDATE t SET name = upper(name) || ?, n = ? WHERE id = ?').run(String(round), Math.floor(rand() * 100), pick());
      else if (x < 0.8) src.db.prepare('UPDATE t SET id = ? WHERE id = ?').run(next++, pick());
      else if (x < 0.9) src.db.prepare('DELETE FROM t WHERE id = ?').run(pick());
      else {
        // Two changes of one row in one batch: a chain the batch must check.
        const id = pick();
        src.db.prepare("UPDATE t SET name = name || '!' WHERE id = ?").run(id);
        src.db.prepare('UPDATE t SET n = n + 1 WHERE id = ?').run(id);
      }
      if (round === 60) {
        // Tamper with the mirror's copy of a row the next batch updates.
        beforeTamper = roundStart; // where the mirror stood before this round's batch
        const id = pick();
        s.session.db.prepare("UPDATE tgt.t SET name = 'tampered' WHERE id = ?").run(id);
        src.db.prepare('UPDATE t SET n = -1 WHERE id = ?').run(id);
        tampered = true;
      }
      const r = await s.runOnce();
      const mirror = r.projections.find((p) => p.name === 't');
      expect(mirror?.state).toBe(tampered ? 'suspended' : 'active');
      if (tampered) expect(mirror?.reason).toBe('TARGET_DIVERGED');
      expect(r.projections.filter((q) => q.name !== 't').map((p) => [p.name, p.state, p.error])).toEqual([
        ['tmap', 'active', undefined],
        ['tfts', 'active', undefined],
      ]);
    }
    expectEmptyWorkTables(s.session.db);
    const v = await verify(src.file, target);
    expect(v.projections.filter((p) => p.name !== 't').map((p) => [p.name, p.ok])).toEqual([
      ['tfts', true],
      ['tmap', true],
    ]);
    // The map's computed TEXT column holds length(name) with TEXT affinity, as a fresh build would.
    const mapped = tableCells(s.session.db, 'tgt', 'tmap');
    expect(mapped.length).toBe(Number(src.db.prepare('SELECT count(*) FROM t WHERE n % 3 <> 0').pluck().get() as bigint));
    expect(mapped.every((row) => row[2]?.startsWith('text:'))).toBe(true);
    // The suspended mirror kept nothing of the tampered batch: its cursor is before it.
    const stored = s.session.db.prepare("SELECT state, reason, seq FROM tgt._sluice_projections WHERE name = 't'").get() as {
      state: string;
      reason: string;
      seq: bigint;
    };
    const fts = s.session.db.prepare("SELECT seq FROM tgt._sluice_projections WHERE name = 'tfts'").pluck().get() as bigint;
    expect([stored.state, stored.reason]).toEqual(['suspended', 'TARGET_DIVERGED']);
    expect(stored.seq).toBeLessThan(fts);
    expect(Number(stored.seq)).toBe(beforeTamper);
  } finally {
    s.close();
  }
});

test('a follower reads through a memory map while it catches up and without one once it applies small batches', async ({ makeDb, tmp }) => {
  const src = makeSource(makeDb, SCHEMA, ['t']);
  const s = await Syncer.open(src.file, path.join(tmp, 'target.db'), {
    projections: [PROJECTIONS[0] as (typeof PROJECTIONS)[0]],
    batchSize: 1000,
  });
  const mapped = () => [
    Number(s.session.db.pragma('main.mmap_size', { simple: true })),
    Number(s.session.db.pragma('tgt.mmap_size', { simple: true })),
  ];
  const bulk = (from: number, count: number) =>
    src.db.transaction(() => {
      const ins = src.db.prepare('INSERT INTO t VALUES (?, ?, 0, NULL)');
      for (let i = from; i < from + count; i++) ins.run(i, `r${i}`);
    })();
  // Windows never maps (session.ts): there a mapped file cannot be truncated.
  const on = process.platform === 'win32' ? 0 : 256 * 1024 * 1024;
  try {
    expect(mapped()).toEqual([on, on]); // a new session starts by catching up
    await s.runOnce(); // the snapshot, then nothing left: following from here
    expect(mapped()).toEqual([0, 0]);
    // A batch that leaves more to apply, or a large one, maps the next (the
    // first batch after a pause reads unmapped).
    bulk(1, 3000);
    const r = await s.runOnce(); // batches of 1000, 1000, 1000
    expect(r.projections[0]?.applied).toBe(3000);
    expectEmptyWorkTables(s.session.db);
    expect(mapped()).toEqual([on, on]);
    src.db.prepare("INSERT INTO t VALUES (9001, 'one', 0, NULL)").run();
    await s.runOnce();
    expect(mapped()).toEqual([0, 0]);
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    s.close();
  }
});

test("a follower's page caches are a catch-up's while it builds and catches up, and SQLite's default once it applies small batches", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t']);
  const target = path.join(tmp, 'target.db');
  const ins = src.db.prepare('INSERT INTO t VALUES (?, ?, 0, NULL)');
  const bulk = (from: number, count: number) =>
    src.db.transaction(() => {
      for (let i = from; i < from + count; i++) ins.run(i, `r${i}`);
    })();
  bulk(1, 2000);
  const s = await Syncer.open(src.file, target, { projections: [PROJECTIONS[0] as (typeof PROJECTIONS)[0]], batchSize: 1000 });
  // KiB, as a negative cache_size says (src/sqlite/catch-up-caches.ts).
  const caches = () => [
    -Number(s.session.db.pragma('main.cache_size', { simple: true })),
    -Number(s.session.db.pragma('tgt.cache_size', { simple: true })),
  ];
  const catchUp = [16384, 32768];
  const follow = [2000, 2000];
  try {
    expect(caches()).toEqual(catchUp); // a new session starts by building or catching up
    await s.runOnce(); // the snapshot, then nothing left: following from here
    expect(caches()).toEqual(follow);
    bulk(2001, 3000);
    await s.runOnce(); // batches of 1000: catch-up work again
    expect(caches()).toEqual(catchUp);
    ins.run(9001, 'one');
    await s.runOnce();
    expect(caches()).toEqual(follow);
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    s.close();
  }
});

test("a rebuild in a session that was following runs with a catch-up's caches, and the session follows with the default ones after it", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t']);
  src.db.transaction(() => {
    const ins = src.db.prepare('INSERT INTO t VALUES (?, ?, ?, NULL)');
    for (let i = 1; i <= 3000; i++) ins.run(i, `r${i}`, i);
  })();
  const during: number[][] = [];
  const opened: { s?: Syncer } = {}; // the progress callback is given before the Syncer exists
  const caches = () => [
    -Number(opened.s?.session.db.pragma('main.cache_size', { simple: true })),
    -Number(opened.s?.session.db.pragma('tgt.cache_size', { simple: true })),
  ];
  const map = (columns: Record<string, string>) => ({ name: 'm', source: 't', kind: 'map' as const, columns });
  const s = await Syncer.open(src.file, path.join(tmp, 'target.db'), {
    projections: [map({ id: 'id', label: 'name' })],
    batchSize: 1000,
    onProgress: (p) => {
      if (p.phase === 'snapshot') during.push(caches());
    },
  });
  opened.s = s;
  try {
    await s.runOnce();
    src.db.prepare("INSERT INTO t VALUES (3001, 'one', 0, NULL)").run();
    await s.runOnce();
    expect(caches()).toEqual([2000, 2000]); // following
    during.length = 0;
    s.setDefinitions([map({ id: 'id', label: 'name', n: 'n' })]);
    const r = await s.runOnce();
    expect(r.projections[0]?.rebuilt).toBe('DEFINITION_CHANGED');
    expect(during.length).toBeGreaterThan(0);
    for (const c of during) expect(c).toEqual([16384, 32768]);
    src.db.prepare("INSERT INTO t VALUES (3002, 'two', 0, NULL)").run();
    await s.runOnce();
    expect(caches()).toEqual([2000, 2000]);
  } finally {
    s.close();
  }
});
