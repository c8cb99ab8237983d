import path from 'node:path';
import { test, expect, describe } from '../../../support/fixtures.ts';
import type { Db } from '../../../../src/sqlite/index.ts';
import { applyRelational, type ProjectionDefinitionInput, type RelationalPath } from '../../../../src/projection/index.ts';
import { Syncer } from '../../../../src/apply/sync/index.ts';
import { verify } from '../../../../src/apply/check/index.ts';
import { batchSql, compiledFor, relational, stageBatch, underTamper } from '../../support/batch.ts';
import { highWater, makeSource, tableCells } from '../../../apply/support/target.ts';

/*
 * A mirror batch that touches each key once is applied on the plain path
 * (relational/plain.ts): no grouping by key; each before-image is checked
 * against the target as it is, then written straight to it in a savepoint.
 * Whatever it cannot apply exactly (a check that fails, a key present, a key
 * touched twice) is undone and goes to the grouped path, which decides it as
 * before: the same verdict, the same target bytes, and nothing of the plain
 * attempt left behind.
 */

const SCHEMA = `
  CREATE TABLE k (id INTEGER PRIMARY KEY, v, w TEXT);
  CREATE TABLE n (name TEXT COLLATE NOCASE PRIMARY KEY, v) WITHOUT ROWID;
  INSERT INTO k VALUES (1, 'x', 'a'), (2, 1, 'b'), (3, x'01', NULL), (4, 2.5, 'd');
  INSERT INTO n VALUES ('a', 'x'), ('b', 1);`;
const MIRRORS: ProjectionDefinitionInput[] = [
  { name: 'k', source: 'k', kind: 'mirror' },
  { name: 'n', source: 'n', kind: 'mirror' },
];

/** One batch on table `table`, applied with `tamper` first, by `path`: its result and the target's cells after it. */
function attempt(db: Db, name: string, lo: number, hi: number, tamper: string, path: RelationalPath) {
  const p = compiledFor(db, MIRRORS.find((d) => d.name === name) ?? (MIRRORS[0] as ProjectionDefinitionInput));
  return underTamper(db, lo, tamper, () => {
    const tampered = tableCells(db, 'tgt', p.targetTable);
    const r = applyRelational(db, 'tgt', relational(p), batchSql(db, p, lo, hi), path);
    return {
      result: { transitions: r.transitions, mismatch: r.mismatch },
      via: r.via,
      tampered,
      cells: tableCells(db, 'tgt', p.targetTable),
    };
  });
}

async function staged(tmp: string, batch: readonly string[]) {
  return stageBatch(path.join(tmp, 'source.db'), path.join(tmp, 'target.db'), {
    schema: SCHEMA,
    tables: ['k', 'n'],
    projections: MIRRORS,
    before: [],
    batch,
  });
}

describe('the plain path of a mirror batch that touches each key once', () => {
  test('applies a clean batch itself (inserts, updates, a delete, a key change) to the source rows', async ({ tmp }) => {
    const { db, lo, hi } = await staged(tmp, [
      "INSERT INTO k VALUES (5, 'new', NULL)",
      'UPDATE k SET v = 1.0 WHERE id = 2',
      'DELETE FROM k WHERE id = 3',
      'UPDATE k SET id = 9 WHERE id = 4',
    ]);
    try {
      const plain = attempt(db, 'k', lo, hi, '', 'auto');
      const reference = attempt(db, 'k', lo, hi, '', 'reference');
      expect(plain.via).toBe('plain');
      expect(plain.result).toEqual(reference.result);
      // The key change is two transitions (old key gone, new key made), as the reference counts it.
      expect(plain.result.transitions).toBe(5);
      expect(plain.cells).toEqual(tableCells(db, 'main', 'k'));
    } finally {
      db.close();
    }
  });

  const TAMPERS = [
    { what: 'a hand-edited row an update finds', tamper: "UPDATE tgt.k SET v = 'edited' WHERE id = 2", seq: 2, reason: 'TARGET_DIVERGED' },
    { what: 'the same value in another storage class', tamper: 'UPDATE tgt.k SET v = 1.0 WHERE id = 2', seq: 2, reason: 'TARGET_DIVERGED' },
    { what: 'a hand-deleted row a delete finds missing', tamper: 'DELETE FROM tgt.k WHERE id = 3', seq: 3, reason: 'TARGET_DIVERGED' },
    { what: "a key change's old row edited", tamper: "UPDATE tgt.k SET w = 'D' WHERE id = 4", seq: 4, reason: 'TARGET_DIVERGED' },
    {
      what: 'a row planted at a key an insert makes',
      tamper: "INSERT INTO tgt.k VALUES (5, 'new', NULL)",
      seq: 1,
      reason: 'UNCAPTURED_REPLACE',
    },
    {
      what: "a row planted at a key change's new key",
      tamper: "INSERT INTO tgt.k VALUES (9, 'p', NULL)",
      seq: 4,
      reason: 'UNCAPTURED_REPLACE',
    },
  ] as const;
  for (const c of TAMPERS) {
    test(`over ${c.what}: undone and decided by the reference exactly as before, nothing of it left`, async ({ tmp }) => {
      const { db, lo, hi } = await staged(tmp, [
        "INSERT INTO k VALUES (5, 'new', NULL)",
        "UPDATE k SET v = 'y' WHERE id = 2",
        'DELETE FROM k WHERE id = 3',
        'UPDATE k SET id = 9 WHERE id = 4',
      ]);
      try {
        const auto = attempt(db, 'k', lo, hi, c.tamper, 'auto');
        const reference = attempt(db, 'k', lo, hi, c.tamper, 'reference');
        expect(auto.result).toEqual(reference.result);
        expect(auto.result.mismatch).toMatchObject({ reason: c.reason, seq: lo + c.seq });
        expect(auto.via).toBeUndefined();
        // The plain path's writes were rolled back to its savepoint: the target is as tampered.
        expect(auto.cells).toEqual(auto.tampered);
      } finally {
        db.close();
      }
    });
  }

  test('a key deleted and inserted again in one batch is not once per key: the grouped path applies it', async ({ tmp }) => {
    const { db, lo, hi } = await staged(tmp, [
      'DELETE FROM k WHERE id = 2',
      "INSERT INTO k VALUES (2, 'again', 'b')",
      'UPDATE k SET v = 0 WHERE id = 1',
    ]);
    try {
      const auto = attempt(db, 'k', lo, hi, '', 'auto');
      expect(auto.via).toBe('grouped');
      expect(auto.result).toEqual(attempt(db, 'k', lo, hi, '', 'reference').result);
      expect(auto.cells).toEqual(tableCells(db, 'main', 'k'));
    } finally {
      db.close();
    }
  });

  test('a key made and then deleted in one batch, over a row planted equal to it: the insert finds its key present (UNCAPTURED_REPLACE), though the delete alone would check out', async ({
    tmp,
  }) => {
    const { db, lo, hi } = await staged(tmp, [
      "INSERT INTO k VALUES (5, 'p', NULL)",
      'DELETE FROM k WHERE id = 5',
      'UPDATE k SET v = 0 WHERE id = 1',
    ]);
    try {
      const tamper = "INSERT INTO tgt.k VALUES (5, 'p', NULL)";
      const auto = attempt(db, 'k', lo, hi, tamper, 'auto');
      expect(auto.result).toEqual(attempt(db, 'k', lo, hi, tamper, 'reference').result);
      expect(auto.result.mismatch).toMatchObject({ reason: 'UNCAPTURED_REPLACE', seq: lo + 1 });
      expect(auto.cells).toEqual(auto.tampered);
    } finally {
      db.close();
    }
  });

  test('a key changed to a key the batch then reuses, and a case-only key change under NOCASE, go to the grouped path', async ({ tmp }) => {
    const { db, lo, hi } = await staged(tmp, [
      'UPDATE k SET id = 7 WHERE id = 1',
      "INSERT INTO k VALUES (1, 'reused', NULL)",
      "UPDATE n SET name = 'A' WHERE name = 'a'",
      "UPDATE n SET v = 'z' WHERE name = 'b'",
    ]);
    try {
      for (const name of ['k', 'n']) {
        const auto = attempt(db, name, lo, hi, '', 'auto');
        expect(auto.via, name).toBe('grouped');
        expect(auto.result, name).toEqual(attempt(db, name, lo, hi, '', 'reference').result);
        expect(auto.cells, name).toEqual(tableCells(db, 'main', name));
      }
    } finally {
      db.close();
    }
  });

  test("with a user's UNIQUE index on the target, the grouped path applies the batch (it deletes every changed key first, so rows may swap values)", async ({
    tmp,
  }) => {
    // Rows 1 and 2 swap their w in one statement: each key once, but written one after the other the index would see 'b' twice.
    const { db, lo, hi } = await staged(tmp, ["UPDATE k SET w = CASE id WHEN 1 THEN 'b' ELSE 'a' END WHERE id IN (1, 2)"]);
    try {
      db.exec('CREATE UNIQUE INDEX tgt.k_w ON k (w)');
      const auto = attempt(db, 'k', lo, hi, '', 'auto');
      expect(auto.via).toBe('grouped');
      expect(auto.result.mismatch).toBeUndefined();
      expect(auto.cells).toEqual(tableCells(db, 'main', 'k'));
      // Without the index the same batch is the plain path's.
      db.exec('DROP INDEX tgt.k_w');
      const plain = attempt(db, 'k', lo, hi, '', 'auto');
      expect(plain.via).toBe('plain');
      expect(plain.cells).toEqual(auto.cells);
    } finally {
      db.close();
    }
  });
});

test('a once-per-key batch applied by sync and then retried applies once: the retry is a no-op and the target equals the source', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)', ['t'], {
    seed: 'INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)',
  });
  const target = path.join(tmp, 'target.db');
  const s = await Syncer.open(src.file, target, { projections: [{ name: 't', source: 't', kind: 'mirror' }] });
  try {
    await s.runOnce();
    const lo = highWater(src.db);
    src.db.exec(
      "INSERT INTO t VALUES (4, 4); UPDATE t SET v = 'two' WHERE id = 2; DELETE FROM t WHERE id = 3; UPDATE t SET id = 10 WHERE id = 1",
    );
    const hi = highWater(src.db);
    const first = await s.applyBatch('t', lo, hi);
    expect(first).toMatchObject({ kind: 'applied' });
    const after = tableCells(s.session.db, 'tgt', 't');
    expect(after).toEqual(tableCells(src.db, 'main', 't'));
    const again = await s.applyBatch('t', lo, hi);
    expect(again.kind).not.toBe('applied');
    expect(tableCells(s.session.db, 'tgt', 't')).toEqual(after);
  } finally {
    s.close();
  }
  const v = await verify(src.file, target);
  expect(v.ok).toBe(true);
});
