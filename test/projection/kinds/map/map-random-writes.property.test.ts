// a map projection under random writes equals a fresh rebuild
import path from 'node:path';
import fc from 'fast-check';
import { test, expect } from '../../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../../src/sqlite/index.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { verify } from '../../../../src/apply/check/index.ts';
import type { ProjectionDefinitionInput } from '../../../../src/projection/index.ts';
import { fileTableCells } from '../../../apply/support/target.ts';

/*
 * Model: a fresh rebuild (snapshot path) of the same definition. The
 * incremental path must agree with it after any interleaving of writes and
 * syncs: updates that move rows into and out of the filter, key changes
 * (including case-only changes of a NOCASE key column), REPLACE (delete +
 * insert on sluice's connection), deletes, and NOCASE comparisons in the
 * filter and in computed columns, and computed columns whose declared type
 * changes the stored value's storage class.
 */

const SCHEMA = `CREATE TABLE things (
  id INTEGER NOT NULL,
  cat TEXT NOT NULL COLLATE NOCASE,
  name TEXT COLLATE NOCASE,
  qty INTEGER,
  price REAL,
  note,
  PRIMARY KEY (id, cat)
)`;

const PROJECTIONS: ProjectionDefinitionInput[] = [
  {
    name: 'picked',
    source: 'things',
    kind: 'map',
    columns: {
      item: 'id',
      category: 'cat',
      title: { from: 'name' },
      label: { expr: "upper(name) || '/' || cat", type: 'TEXT' },
      // NOCASE: 'Widget' = 'widget', and 'apple' < 'm' < 'Zebra'.
      is_widget: { expr: "name = 'widget'" },
      rank: { expr: "CASE WHEN name < 'm' THEN 'low' WHEN name IS NULL THEN 'none' ELSE 'high' END" },
      total: { expr: 'qty * price' },
      note_kind: { expr: 'typeof(note)' },
      note: 'note',
    },
    // cat is NOCASE: 'A' is in; name <> 'skip' leaves 'SKIP' out too.
    filter: "cat IN ('a', 'b') AND (qty IS NULL OR qty > 2) AND name <> 'skip'",
  },
  {
    name: 'lowered',
    source: 'things',
    kind: 'map',
    columns: {
      id: 'id',
      cat: 'cat',
      lname: { expr: 'lower(name)', collate: 'NOCASE' },
      big: { expr: "price > 1 OR cat = 'c'" },
      // Declared types whose affinity changes the stored value: 3 is stored as '3', '1.1' as 1.1.
      qty_text: { expr: 'qty', type: 'TEXT' },
      price_num: { expr: 'CAST(price AS TEXT)', type: 'NUMERIC' },
    },
  },
  // The mirror's set-based path, under the same writes (composite key changes of one part, case-only key changes).
  { name: 'things', source: 'things', kind: 'mirror' },
];

const NAMES = ["'widget'", "'Widget'", "'WIDGET'", "'skip'", "'Skip'", "'apple'", "'Zebra'", "'m'", "'M'", 'NULL', "CAST(x'ff41' AS TEXT)"];
const CATS = ["'a'", "'A'", "'b'", "'B'", "'c'"];
const QTYS = ['NULL', '0', '2', '3', '4', '7'];
const PRICES = ['NULL', '0.5', '1.1', '2', '1e10', '0.30000000000000004', '-1'];
const NOTES = ['NULL', '1', '1.0', "'1'", "x'01'", "''", "x''", "CAST(x'ff41' AS TEXT)", "'n'"];

const rowArb = fc.record({
  id: fc.integer({ min: 1, max: 6 }),
  cat: fc.constantFrom(...CATS),
  name: fc.constantFrom(...NAMES),
  qty: fc.constantFrom(...QTYS),
  price: fc.constantFrom(...PRICES),
  note: fc.constantFrom(...NOTES),
});

const setArb = fc.oneof(
  fc.constantFrom(...NAMES).map((v) => ['name', v] as const),
  fc.constantFrom(...QTYS).map((v) => ['qty', v] as const),
  fc.constantFrom(...PRICES).map((v) => ['price', v] as const),
  fc.constantFrom(...NOTES).map((v) => ['note', v] as const),
);

const opArb = fc.oneof(
  { weight: 4, arbitrary: rowArb.map((r) => ({ kind: 'insert' as const, ...r })) },
  { weight: 1, arbitrary: rowArb.map((r) => ({ kind: 'replace' as const, ...r })) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('update' as const), pick: fc.nat(), set: fc.array(setArb, { minLength: 1, maxLength: 3 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('rekey' as const),
      pick: fc.nat(),
      id: fc.option(fc.integer({ min: 1, max: 6 })),
      cat: fc.option(fc.constantFrom(...CATS)),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bulk' as const), cat: fc.constantFrom(...CATS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('sync' as const), batch: fc.integer({ min: 1, max: 8 }) }) },
);
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

function pickRowid(db: Db, pick: number): bigint | undefined {
  const n = Number(db.prepare('SELECT count(*) FROM things').pluck().get() as bigint);
  if (n === 0) return undefined;
  return db
    .prepare('SELECT rowid FROM things ORDER BY rowid LIMIT 1 OFFSET ?')
    .pluck()
    .get(pick % n) as bigint;
}

async function run(db: Db, source: string, target: string, op: Op): Promise<void> {
  switch (op.kind) {
    case 'insert':
    case 'replace': {
      const verb = op.kind === 'insert' ? 'INSERT' : 'INSERT OR REPLACE';
      const tail = op.kind === 'insert' ? ' ON CONFLICT DO NOTHING' : '';
      db.exec(
        `${verb} INTO things (id, cat, name, qty, price, note) VALUES (${op.id}, ${op.cat}, ${op.name}, ${op.qty}, ${op.price}, ${op.note})${tail}`,
      );
      return;
    }
    case 'update': {
      const rowid = pickRowid(db, op.pick);
      if (rowid !== undefined)
        db.prepare(`UPDATE things SET ${op.set.map(([c, v]) => `${c} = ${v}`).join(', ')} WHERE rowid = ?`).run(rowid);
      return;
    }
    case 'rekey': {
      const rowid = pickRowid(db, op.pick);
      const set = [...(op.id === null ? [] : [`id = ${op.id}`]), ...(op.cat === null ? [] : [`cat = ${op.cat}`])];
      if (rowid !== undefined && set.length > 0) db.prepare(`UPDATE OR IGNORE things SET ${set.join(', ')} WHERE rowid = ?`).run(rowid);
      return;
    }
    case 'bulk':
      db.exec(
        `UPDATE things SET qty = coalesce(qty, 0) + 1, name = CASE WHEN name = 'widget' THEN upper(name) ELSE name END WHERE cat = ${op.cat}`,
      );
      return;
    case 'delete': {
      const rowid = pickRowid(db, op.pick);
      if (rowid !== undefined) db.prepare('DELETE FROM things WHERE rowid = ?').run(rowid);
      return;
    }
    case 'sync': {
      const r = await sync(source, target, { projections: PROJECTIONS, batchSize: op.batch });
      expect(r.projections.map((p) => [p.name, p.state, p.reason]).sort()).toEqual([
        ['lowered', 'active', undefined],
        ['picked', 'active', undefined],
        ['things', 'active', undefined],
      ]);
    }
  }
}

test('a map with a filter and computed columns (and a mirror beside it), synced incrementally under random writes, equals a fresh rebuild of the same definition', async ({
  tmp,
}) => {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.nat({ max: 40 }), async (ops, startAt) => {
      const dir = path.join(tmp, `run${n++}`);
      const source = `${dir}-source.db`;
      const target = `${dir}-target.db`;
      const fresh = `${dir}-fresh.db`;
      const db = openDatabase(source, { create: true });
      try {
        db.exec(SCHEMA);
        enable(db, ['things']);
        const first = Math.min(startAt, ops.length);
        for (const op of ops.slice(0, first)) if (op.kind !== 'sync') await run(db, source, target, op);
        await run(db, source, target, { kind: 'sync', batch: 5 });
        for (const op of ops.slice(first)) await run(db, source, target, op);
        await run(db, source, target, { kind: 'sync', batch: 3 });

        await sync(source, fresh, { projections: PROJECTIONS });
        for (const t of ['picked', 'lowered', 'things']) expect(fileTableCells(target, t), t).toEqual(fileTableCells(fresh, t));
        expect(fileTableCells(target, 'things')).toEqual(fileTableCells(source, 'things'));
        const v = await verify(source, target);
        expect(v.projections.map((p) => [p.name, p.ok, p.diffs])).toEqual([
          ['lowered', true, []],
          ['picked', true, []],
          ['things', true, []],
        ]);
      } finally {
        db.close();
      }
    }),
    { numRuns: 25 },
  );
});

test('the filter and expressions use the source collation on the incremental path (a fixed example)', async ({ tmp }) => {
  const source = path.join(tmp, 'source.db');
  const target = path.join(tmp, 'target.db');
  const db = openDatabase(source, { create: true });
  try {
    db.exec(SCHEMA);
    enable(db, ['things']);
    await sync(source, target, { projections: PROJECTIONS });
    // Under BINARY, 'A' would fail cat IN ('a', 'b'), 'SKIP' would pass name <> 'skip', and 'Widget' <> 'widget'.
    db.exec("INSERT INTO things VALUES (1, 'A', 'Widget', 5, 2.0, NULL), (2, 'a', 'SKIP', 5, 1.0, NULL), (3, 'B', 'Zebra', 5, 1.0, 'x')");
    await sync(source, target, { projections: PROJECTIONS });
    const t = openDatabase(target);
    try {
      expect(t.prepare('SELECT item, category, is_widget, rank FROM picked ORDER BY item').raw().all()).toEqual([
        [1n, 'A', 1n, 'high'],
        [3n, 'B', 0n, 'high'],
      ]);
      // Out of the filter by a case-only change of the NOCASE name, and back in.
      db.exec("UPDATE things SET name = 'skIP' WHERE id = 1; UPDATE things SET name = 'apple' WHERE id = 2");
      await sync(source, target, { projections: PROJECTIONS });
      expect(t.prepare('SELECT item, rank FROM picked ORDER BY item').raw().all()).toEqual([
        [2n, 'low'],
        [3n, 'high'],
      ]);
    } finally {
      t.close();
    }
  } finally {
    db.close();
  }
});
