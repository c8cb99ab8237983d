// a unique index a user adds to a target table never makes sluice delete rows
import path from 'node:path';
import { vi } from 'vitest';
import { test, expect } from '../../support/fixtures.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { applyRelational } from '../../../src/projection/index.ts';
import { compiledFor, batchSql, relational } from '../../projection/support/batch.ts';
import { highWater, makeSource, tableCells } from '../support/target.ts';

/*
 * A user adds a UNIQUE index to a target table (for their own queries) on a
 * column the source does not constrain. A batch is written as a DELETE and
 * an INSERT OR REPLACE; REPLACE would silently delete whichever other row
 * the new index says conflicts, so with such an index the rows are written
 * plainly (every changed key deleted first): conflicts between keys that the
 * batch's end state resolves pass, and a real one suspends the projection
 * with TARGET_CONSTRAINT, writing nothing, until the index goes.
 */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT, n INTEGER)';
const SEED = "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)";
const PROJECTIONS = [
  { name: 't', source: 't', kind: 'mirror' as const },
  { name: 'tmap', source: 't', kind: 'map' as const, columns: { id: 'id', email: 'email' } },
];

test('with a UNIQUE index on a target column: a batch whose rows swap values applies exactly; one that leaves two rows equal suspends that projection with TARGET_CONSTRAINT and writes nothing; dropping the index lets the next sync apply it', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  const s = await Syncer.open(src.file, target, { projections: PROJECTIONS });
  try {
    await s.runOnce();
    s.session.db.exec('CREATE UNIQUE INDEX tgt.t_email ON t (email)');

    // Values move between rows within one batch; at its end they are unique again.
    src.db.exec(`UPDATE t SET email = 'z' WHERE id = 2;
      UPDATE t SET email = 'b' WHERE id = 1;
      UPDATE t SET email = 'a' WHERE id = 3;
      INSERT INTO t VALUES (4, 'c', 4);
      UPDATE t SET id = 10 WHERE id = 1;
      UPDATE t SET email = 'y' WHERE id = 2;`);
    const swapped = await s.runOnce();
    expect(swapped.projections.map((p) => [p.name, p.state])).toEqual([
      ['t', 'active'],
      ['tmap', 'active'],
    ]);
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(tableCells(src.db, 'main', 't'));

    // The source allows two rows with 'b'; the target's index does not. A
    // REPLACE would have deleted row 10.
    const before = tableCells(s.session.db, 'tgt', 't');
    src.db.exec("INSERT INTO t VALUES (5, 'b', 5); UPDATE t SET n = 0 WHERE id = 4");
    const refused = await s.runOnce();
    const mirror = refused.projections.find((p) => p.name === 't');
    expect(mirror).toMatchObject({ state: 'suspended', reason: 'TARGET_CONSTRAINT' });
    expect(String(mirror?.detail?.message)).toMatch(/UNIQUE constraint failed: t\.email.*Drop the index or make it non-unique/);
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(before);
    // Other projections go on.
    expect(refused.projections.find((p) => p.name === 'tmap')).toMatchObject({ state: 'active', applied: 2 });

    // Still there on the next run: it stays suspended, with nothing written.
    const again = await s.runOnce();
    expect(again.projections.find((p) => p.name === 't')).toMatchObject({ state: 'suspended', reason: 'TARGET_CONSTRAINT' });
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(before);

    // Index gone: the batch applies from the stored cursor, no rebuild.
    s.session.db.exec('DROP INDEX tgt.t_email');
    const resumed = await s.runOnce();
    const t = resumed.projections.find((p) => p.name === 't');
    expect(t).toMatchObject({ state: 'active', seq: highWater(src.db) });
    expect([t?.rebuilt, t?.snapshotRows]).toEqual([undefined, undefined]);
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    s.close();
  }
  expect((await verify(src.file, target)).ok).toBe(true);
});

test('the reference apply writes the same way: the same batches under the same index give the same bytes, or the same UNIQUE failure, through both paths', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  const s = await Syncer.open(src.file, target, { projections: [PROJECTIONS[0] as (typeof PROJECTIONS)[0]] });
  await s.runOnce();
  s.session.db.exec('CREATE UNIQUE INDEX tgt.t_email ON t (email)');
  s.close();
  const lo = highWater(src.db);
  src.db.exec(
    "UPDATE t SET email = 'x' WHERE id = 2; UPDATE t SET email = 'b' WHERE id = 1; UPDATE t SET email = 'a' WHERE id = 3; UPDATE t SET id = 7 WHERE id = 2",
  );
  const mid = highWater(src.db);
  const clean = tableCells(src.db, 'main', 't');
  src.db.exec("INSERT INTO t VALUES (8, 'a', 8)"); // a second 'a': the source has no such index
  const hi = highWater(src.db);
  src.db.prepare('ATTACH DATABASE ? AS tgt').run(target);
  const p = compiledFor(src.db, PROJECTIONS[0] as (typeof PROJECTIONS)[0]);
  const apply = (to: number, path: 'auto' | 'reference') => {
    src.db.exec('BEGIN');
    try {
      const r = applyRelational(src.db, 'tgt', relational(p), batchSql(src.db, p, lo, to), path);
      expect([r.decidedBy, r.mismatch]).toEqual([path === 'auto' ? 'fast' : 'reference', undefined]);
      return tableCells(src.db, 'tgt', 't');
    } catch (err) {
      return (err as { code?: string }).code;
    } finally {
      src.db.exec('ROLLBACK');
    }
  };
  expect(apply(mid, 'auto')).toEqual(clean);
  expect(apply(mid, 'reference')).toEqual(clean);
  expect(apply(hi, 'auto')).toBe('SQLITE_CONSTRAINT_UNIQUE');
  expect(apply(hi, 'reference')).toBe('SQLITE_CONSTRAINT_UNIQUE');
});

test("values swapped inside one source transaction that a batch boundary cuts: the batch is tried again up to the high-water mark, a committed state, and applies (other tables' events in between do not count against the bound)", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, `${SCHEMA}; CREATE TABLE other (id INTEGER PRIMARY KEY)`, ['t', 'other'], { seed: SEED });
  const s = await Syncer.open(src.file, path.join(tmp, 'target.db'), {
    projections: [PROJECTIONS[0] as (typeof PROJECTIONS)[0]],
    batchSize: 1,
  });
  try {
    await s.runOnce();
    s.session.db.exec('CREATE UNIQUE INDEX tgt.t_email ON t (email)');
    // One transaction; after its first statement alone, 'b' would be there twice.
    src.db.exec(
      `BEGIN; UPDATE t SET email = 'b' WHERE id = 1; ${Array.from({ length: 20 }, (_, i) => `INSERT INTO other VALUES (${i})`).join('; ')}; UPDATE t SET email = 'a' WHERE id = 2; COMMIT`,
    );
    const r = await s.runOnce();
    expect(r.projections[0]).toMatchObject({ state: 'active', seq: highWater(src.db) });
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    s.close();
  }
});

test('the retry up to the high-water mark is bounded: with more than ten batches ahead, a batch that breaks the index suspends, saying the batch may end inside a source transaction; so does an explicit range', async ({
  makeDb,
  tmp,
}) => {
  for (const mode of ['range', 'backlog'] as const) {
    const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED, name: `${mode}.db` });
    const s = await Syncer.open(src.file, path.join(tmp, `${mode}-target.db`), {
      projections: [PROJECTIONS[0] as (typeof PROJECTIONS)[0]],
      batchSize: 1,
    });
    try {
      await s.runOnce();
      s.session.db.exec('CREATE UNIQUE INDEX tgt.t_email ON t (email)');
      const lo = highWater(src.db);
      src.db.exec("BEGIN; UPDATE t SET email = 'b' WHERE id = 1; UPDATE t SET email = 'a' WHERE id = 2; COMMIT");
      for (let i = 10; i < 30; i++) src.db.prepare('INSERT INTO t VALUES (?, ?, 0)').run(i, `e${i}`);
      const out = mode === 'range' ? await s.applyBatch('t', lo, lo + 1) : (await s.runOnce()).projections[0];
      expect(out).toMatchObject(
        mode === 'range' ? { kind: 'suspended', reason: 'TARGET_CONSTRAINT' } : { state: 'suspended', reason: 'TARGET_CONSTRAINT' },
      );
      const message = String((out as unknown as { detail: { message: string } }).detail.message);
      expect(message, mode).toMatch(
        mode === 'range'
          ? /may end inside a source transaction\)\. Drop the index/
          : /may end inside a source transaction, and there were too many events ahead/,
      );
      expect(Number(s.session.db.prepare("SELECT seq FROM tgt._sluice_projections WHERE name = 't'").pluck().get())).toBe(lo);
      if (mode === 'range') {
        // A range that ends at a commit of the source applies, index and all.
        expect(await s.applyBatch('t', lo, highWater(src.db))).toMatchObject({ kind: 'applied', seq: highWater(src.db) });
      } else {
        // While the index is there a sync leaves it suspended (tried at most once a minute); once it goes, the backlog applies.
        expect((await s.runOnce()).projections[0]).toMatchObject({ state: 'suspended', reason: 'TARGET_CONSTRAINT' });
        s.session.db.exec('DROP INDEX tgt.t_email');
        expect((await s.runOnce()).projections[0]).toMatchObject({ state: 'active', seq: highWater(src.db) });
      }
      expect(tableCells(s.session.db, 'tgt', 't')).toEqual(tableCells(src.db, 'main', 't'));
    } finally {
      s.close();
    }
  }
});

test("an fts5 projection: a UNIQUE index on its key table (which sluice updates in place) or on one of FTS5's tables (which FTS5 writes with REPLACE) suspends it with TARGET_CONSTRAINT before any write, only when a batch has events for it; dropping it lets the next sync go on", async ({
  makeDb,
  tmp,
}) => {
  const cases = [
    // A swap of two keys' values: the key table updated in place would refuse it midway.
    {
      index: 'ts_src (email)',
      table: 'ts_src',
      change: "UPDATE t SET email = 'swap' WHERE id = 1; UPDATE t SET email = 'a b' WHERE id = 2; UPDATE t SET email = 'c' WHERE id = 1",
    },
    // Same size as row 3's: FTS5's REPLACE into ts_docsize would have deleted row 3's entry.
    { index: 'ts_docsize (sz)', table: 'ts_docsize', change: "INSERT INTO t VALUES (4, 'd d d', 4)" },
  ];
  for (const [i, c] of cases.entries()) {
    const src = makeSource(makeDb, `${SCHEMA}; CREATE TABLE other (id INTEGER PRIMARY KEY)`, ['t', 'other'], {
      seed: "INSERT INTO t VALUES (1, 'a', 1), (2, 'b b', 2), (3, 'c c c', 3)",
      name: `s${i}.db`,
    });
    const fts = { name: 'ts', source: 't', kind: 'fts5' as const, columns: ['email'], content: 'external' as const };
    const s = await Syncer.open(src.file, path.join(tmp, `t${i}.db`), { projections: [fts] });
    try {
      await s.runOnce();
      s.session.db.exec(`CREATE UNIQUE INDEX tgt.ux ON ${c.index}`);
      src.db.exec('INSERT INTO other VALUES (1)');
      expect((await s.runOnce()).projections[0], c.table).toMatchObject({ state: 'active', seq: highWater(src.db) });
      src.db.exec(c.change);
      const before = tableCells(s.session.db, 'tgt', c.table);
      const r = await s.runOnce();
      expect(r.projections[0], c.table).toMatchObject({ state: 'suspended', reason: 'TARGET_CONSTRAINT' });
      expect(String(r.projections[0]?.detail?.message)).toContain(`${c.table} has a UNIQUE index`);
      expect(tableCells(s.session.db, 'tgt', c.table)).toEqual(before);
      s.session.db.exec('DROP INDEX tgt.ux');
      expect((await s.runOnce()).projections[0], c.table).toMatchObject({ state: 'active', seq: highWater(src.db) });
      const n = Number(src.db.prepare('SELECT count(*) FROM t').pluck().get() as bigint);
      expect(s.session.db.prepare('SELECT count(*) FROM tgt.ts_docsize').pluck().get()).toBe(BigInt(n));
      expect(s.session.db.prepare("SELECT rowid FROM tgt.ts WHERE ts MATCH 'c'").pluck().all()).toEqual(
        c.table === 'ts_src' ? [1n, 3n] : [3n],
      );
    } finally {
      s.close();
    }
  }
});

test('a projection suspended by a UNIQUE index still rebuilds when its definition changes (the index, no longer fitting, is left out and reported)', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'target.db');
  let s = await Syncer.open(src.file, target, { projections: [PROJECTIONS[1] as (typeof PROJECTIONS)[1]] });
  try {
    await s.runOnce();
    s.session.db.exec('CREATE UNIQUE INDEX tgt.ux ON tmap (email)');
    src.db.exec("INSERT INTO t VALUES (5, 'a', 5)");
    expect((await s.runOnce()).projections[0]).toMatchObject({ state: 'suspended', reason: 'TARGET_CONSTRAINT' });
  } finally {
    s.close();
  }
  s = await Syncer.open(src.file, target, {
    projections: [{ name: 'tmap', source: 't', kind: 'map' as const, columns: { id: 'id', n: 'n' } }],
  });
  try {
    const r = (await s.runOnce()).projections[0];
    expect(r).toMatchObject({ state: 'active', rebuilt: 'DEFINITION_CHANGED', seq: highWater(src.db) });
    expect(r?.droppedIndexes?.map((d) => [d.name, d.why])).toEqual([['ux', 'no such column: email']]);
  } finally {
    s.close();
  }
});

test('while the index is there a suspended projection is tried again once a minute, however often sync runs (a skipped try rewrites nothing), and applies once the source no longer breaks it; exactly ten batches of its table ahead still get the retry up to the last commit', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, `${SCHEMA}; CREATE TABLE other (id INTEGER PRIMARY KEY)`, ['t', 'other'], { seed: SEED });
  const s = await Syncer.open(src.file, path.join(tmp, 'target.db'), {
    projections: [PROJECTIONS[0] as (typeof PROJECTIONS)[0]],
    batchSize: 1,
  });
  let now = Date.now();
  const clock = vi.spyOn(Date, 'now').mockImplementation(() => now);
  const updatedMs = () => Number(s.session.db.prepare("SELECT updated_ms FROM tgt._sluice_projections WHERE name = 't'").pluck().get());
  try {
    await s.runOnce();
    s.session.db.exec('CREATE UNIQUE INDEX tgt.t_email ON t (email)');
    // Ten events of t (its first one alone breaks the index), then one of another table at the high-water mark.
    src.db.exec(
      `BEGIN; UPDATE t SET email = 'b' WHERE id = 1; UPDATE t SET email = 'a' WHERE id = 2; ${Array.from({ length: 8 }, (_, i) => `INSERT INTO t VALUES (${10 + i}, 'x${i}', 0)`).join('; ')}; INSERT INTO other VALUES (1); COMMIT`,
    );
    expect((await s.runOnce()).projections[0]).toMatchObject({ state: 'active', seq: highWater(src.db) });

    src.db.exec("INSERT INTO t VALUES (5, 'a', 5)");
    expect((await s.runOnce()).projections[0]).toMatchObject({ state: 'suspended', reason: 'TARGET_CONSTRAINT' });
    const suspendedAt = updatedMs();
    src.db.exec("UPDATE t SET email = 'e' WHERE id = 5"); // the duplicate is gone at the source
    for (const later of [20_000, 40_000, 59_000]) {
      now += later - (now - suspendedAt);
      expect((await s.runOnce()).projections[0], `${later} ms`).toMatchObject({ state: 'suspended', reason: 'TARGET_CONSTRAINT' });
      expect(updatedMs()).toBe(suspendedAt);
    }
    now = suspendedAt + 61_000;
    expect((await s.runOnce()).projections[0]).toMatchObject({ state: 'active', seq: highWater(src.db) });
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(tableCells(src.db, 'main', 't'));
  } finally {
    clock.mockRestore();
    s.close();
  }
});
