import path from 'node:path';
import fc from 'fast-check';
import { test, expect } from '../support/fixtures.ts';
import { openDatabase, type Db } from '../../src/sqlite/connection.ts';
import { enable } from '../../src/capture/enable.ts';
import { Syncer } from '../../src/apply/sync.ts';
import { verify } from '../../src/apply/verify.ts';
import type { ProjectionDefinitionInput } from '../../src/projection/definition.ts';

/*
 * verify compares a projection at its own cursor: keys the source changed
 * after it are compared as they were then (verify-rewind.ts). Model: a
 * target applied up to any seq of any history of inserts, REPLACEs, updates,
 * key changes (case-only ones of a NOCASE key too) and deletes is ok, and a
 * row of it tampered with is found, whatever the source did after the cursor.
 */

const SCHEMA = `CREATE TABLE things (id INTEGER NOT NULL, cat TEXT NOT NULL COLLATE NOCASE, name TEXT, qty INTEGER, PRIMARY KEY (id, cat))`;

const PROJECTIONS: ProjectionDefinitionInput[] = [
  { name: 'things', source: 'things', kind: 'mirror' },
  {
    name: 'picked',
    source: 'things',
    kind: 'map',
    columns: { item: 'id', category: 'cat', label: { expr: "upper(name) || '/' || cat", type: 'TEXT' }, qty: 'qty' },
    filter: "cat IN ('a', 'b') AND (qty IS NULL OR qty > 2)",
  },
];

const CATS = ["'a'", "'A'", "'b'", "'c'"];
const NAMES = ["'x'", "'Y'", 'NULL', "'zz'"];
const QTYS = ['NULL', '1', '3', '5'];

const rowArb = fc.record({
  id: fc.integer({ min: 1, max: 5 }),
  cat: fc.constantFrom(...CATS),
  name: fc.constantFrom(...NAMES),
  qty: fc.constantFrom(...QTYS),
});
const opArb = fc.oneof(
  { weight: 4, arbitrary: rowArb.map((r) => ({ kind: 'insert' as const, ...r })) },
  { weight: 1, arbitrary: rowArb.map((r) => ({ kind: 'replace' as const, ...r })) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('update' as const),
      pick: fc.nat(),
      name: fc.constantFrom(...NAMES),
      qty: fc.constantFrom(...QTYS),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('rekey' as const),
      pick: fc.nat(),
      id: fc.integer({ min: 1, max: 5 }),
      cat: fc.constantFrom(...CATS),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
);
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

function pickRowid(db: Db, pick: number): bigint | undefined {
  const n = Number(db.prepare('SELECT count(*) FROM things').pluck().get() as bigint);
  return n === 0
    ? undefined
    : (db
        .prepare('SELECT rowid FROM things ORDER BY rowid LIMIT 1 OFFSET ?')
        .pluck()
        .get(pick % n) as bigint);
}

function run(db: Db, op: Op): void {
  const rowid = 'pick' in op ? pickRowid(db, op.pick) : undefined;
  if (op.kind === 'insert') db.exec(`INSERT INTO things VALUES (${op.id}, ${op.cat}, ${op.name}, ${op.qty}) ON CONFLICT DO NOTHING`);
  else if (op.kind === 'replace') db.exec(`INSERT OR REPLACE INTO things VALUES (${op.id}, ${op.cat}, ${op.name}, ${op.qty})`);
  else if (rowid === undefined) return;
  else if (op.kind === 'update') db.prepare(`UPDATE things SET name = ${op.name}, qty = ${op.qty} WHERE rowid = ?`).run(rowid);
  else if (op.kind === 'rekey') db.prepare(`UPDATE OR IGNORE things SET id = ${op.id}, cat = ${op.cat} WHERE rowid = ?`).run(rowid);
  else db.prepare('DELETE FROM things WHERE rowid = ?').run(rowid);
}

const hw = (db: Db) => Number((db.prepare('SELECT coalesce(max(seq), 0) FROM _sluice_journal').pluck().get() as bigint | number) ?? 0);

test('a target applied up to any seq verifies ok at its cursor, and a tampered row of it is found, whatever the source did after', async ({
  tmp,
}) => {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(opArb, { maxLength: 12 }),
      fc.array(opArb, { minLength: 1, maxLength: 25 }),
      fc.nat(),
      fc.nat(),
      async (before, after, cut, tamper) => {
        const source = path.join(tmp, `s${n}.db`);
        const target = path.join(tmp, `t${n++}.db`);
        const db = openDatabase(source, { create: true });
        try {
          db.exec(SCHEMA);
          enable(db, ['things']);
          for (const op of before) run(db, op);
          const s = await Syncer.open(source, target, { projections: PROJECTIONS });
          try {
            await s.runOnce();
            const from = hw(db);
            const seqs = [from];
            for (const op of after) {
              run(db, op);
              seqs.push(hw(db));
            }
            const to = seqs[cut % seqs.length] ?? from;
            for (const p of PROJECTIONS) await s.applyBatch(p.name, from, to);
          } finally {
            s.close();
          }
          const v = await verify(source, target);
          expect(v.projections.map((p) => [p.name, p.ok, p.diffs, p.reason])).toEqual([
            ['picked', true, [], undefined],
            ['things', true, [], undefined],
          ]);
          const t = openDatabase(target);
          let key: unknown[] | undefined;
          try {
            const rows = t.prepare('SELECT id, cat FROM things ORDER BY id, cat').raw().all() as unknown[][];
            key = rows[tamper % Math.max(rows.length, 1)];
            if (key !== undefined) t.prepare("UPDATE things SET name = 'tampered' WHERE id = ? AND cat = ?").run(...key);
          } finally {
            t.close();
          }
          if (key !== undefined) {
            const w = await verify(source, target);
            const things = w.projections.find((p) => p.name === 'things');
            expect(things?.ok).toBe(false);
            expect(things?.diffs).toEqual([{ key: key.map((x) => (typeof x === 'bigint' ? Number(x) : x)), kind: 'different' }]);
          }
        } finally {
          db.close();
        }
      },
    ),
    { numRuns: 40 },
  );
});
