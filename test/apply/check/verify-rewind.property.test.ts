// verify of a target behind its source compares each key as it was at the cursor
import path from 'node:path';
import fc from 'fast-check';
import { test, expect } from '../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { enable, pruneJournal } from '../../../src/capture/index.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';

/*
 * verify compares a projection at its own cursor: keys the source changed
 * after it are compared as they were then (verify-rewind.ts). Model: a
 * target applied up to any seq of any history of inserts, REPLACEs, updates,
 * key changes (case-only ones of a NOCASE key too) and deletes is ok, and a
 * row of it tampered with is found, whatever the source did after the cursor:
 * a value changed, a row deleted, a row added, a row of a key the source
 * changed after the cursor set to its current source values, or a row the
 * source made after the cursor added as it is now (both ahead of the
 * cursor, so not the source at the cursor). A journal pruned past the cursor
 * leaves the keys changed since unknown: nothing is compared (BEHIND); one
 * pruned up to the cursor or before it changes nothing.
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
const tamperArb = fc.record({
  pick: fc.nat(),
  how: fc.constantFrom('value' as const, 'delete' as const, 'extra' as const, 'ahead' as const, 'revive' as const),
});
type Tamper = typeof tamperArb extends fc.Arbitrary<infer T> ? T : never;

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
      tamperArb,
      fc.option(fc.nat(), { freq: 4 }),
      async (before, after, cut, tamper, pruneBack) => {
        const source = path.join(tmp, `s${n}.db`);
        const target = path.join(tmp, `t${n++}.db`);
        const db = openDatabase(source, { create: true });
        try {
          db.exec(SCHEMA);
          enable(db, ['things']);
          for (const op of before) run(db, op);
          const s = await Syncer.open(source, target, { projections: PROJECTIONS });
          let to: number;
          try {
            await s.runOnce();
            const from = hw(db);
            const seqs = [from];
            for (const op of after) {
              run(db, op);
              seqs.push(hw(db));
            }
            to = seqs[cut % seqs.length] ?? from;
            for (const p of PROJECTIONS) await s.applyBatch(p.name, from, to);
          } finally {
            s.close();
          }
          // Sometimes the journal is pruned (as prune does, with a retention of a few events): past the cursor, or not.
          let prunedThrough = 0;
          if (pruneBack !== null && hw(db) > 1) {
            db.prepare('UPDATE _sluice_state SET retention = ?').run(1 + (pruneBack % (hw(db) - 1)));
            prunedThrough = pruneJournal(db).prunedThrough;
          }
          const v = await verify(source, target);
          if (prunedThrough > to) {
            // The keys changed after the cursor cannot be told: nothing compared, and not ok.
            expect(v.projections.map((p) => [p.name, p.ok, p.reason, p.checked])).toEqual([
              ['picked', false, 'BEHIND', 0],
              ['things', false, 'BEHIND', 0],
            ]);
            return;
          }
          if (prunedThrough === to && to > 0) {
            // Pruned through the cursor's own last event: the history it continues cannot be checked, so it is not
            // compared (CURSOR_PRUNED: an older copy restored and written to this horizon would look the same).
            expect(v.projections.map((p) => [p.name, p.ok, p.diffs, p.reason])).toEqual([
              ['picked', false, [], 'CURSOR_PRUNED'],
              ['things', false, [], 'CURSOR_PRUNED'],
            ]);
            return;
          }
          expect(v.projections.map((p) => [p.name, p.ok, p.diffs, p.reason])).toEqual([
            ['picked', true, [], undefined],
            ['things', true, [], undefined],
          ]);
          const found = tamperWith(db, target, tamper);
          if (found !== undefined) {
            const w = await verify(source, target);
            const things = w.projections.find((p) => p.name === 'things');
            expect(things?.ok).toBe(false);
            expect(things?.diffs).toEqual([found]);
          }
        } finally {
          db.close();
        }
      },
    ),
    { numRuns: 50 },
  );
});

/**
 * Changes the target's mirror `things` as `tamper` says and returns the diff
 * verify must report, or undefined when there is no row to tamper with.
 */
function tamperWith(src: Db, target: string, tamper: Tamper): { key: unknown[]; kind: 'missing' | 'extra' | 'different' } | undefined {
  const t = openDatabase(target);
  const num = (x: unknown) => (typeof x === 'bigint' ? Number(x) : x);
  try {
    const rows = t.prepare('SELECT id, cat, name, qty FROM things ORDER BY id, cat').raw().all() as unknown[][];
    if (tamper.how === 'extra') {
      // A key no op ever makes (ids 1-5, categories a, A, b, c).
      t.prepare("INSERT INTO things VALUES (9, 'z', 'x', 1)").run();
      return { key: [9, 'z'], kind: 'extra' as const };
    }
    if (tamper.how === 'ahead') {
      // A row whose key the source has now, with other values than the target's: set to the source's (later) values.
      const ahead = rows.flatMap((r) => {
        const now = src.prepare('SELECT name, qty FROM things WHERE id = ? AND cat = ? COLLATE BINARY').raw().get(r[0], r[1]) as
          unknown[] | undefined;
        return now !== undefined && (now[0] !== r[2] || num(now[1]) !== num(r[3])) ? [[...r.slice(0, 2), ...now]] : [];
      });
      const row = ahead[tamper.pick % Math.max(ahead.length, 1)];
      if (row !== undefined) {
        t.prepare('UPDATE things SET name = ?, qty = ? WHERE id = ? AND cat = ? COLLATE BINARY').run(row[2], row[3], row[0], row[1]);
        return { key: row.slice(0, 2).map(num), kind: 'different' as const };
      }
    }
    if (tamper.how === 'revive') {
      // A row the source has now (made after the cursor) and the target has not: added as the source has it.
      const made = (src.prepare('SELECT id, cat, name, qty FROM things ORDER BY id, cat').raw().all() as unknown[][]).filter(
        (r) => !rows.some((x) => num(x[0]) === num(r[0]) && x[1] === r[1]),
      );
      for (let i = 0; i < made.length; i++) {
        const row = made[(tamper.pick + i) % made.length] as unknown[];
        // Not where the target's NOCASE key already holds the other case of it.
        if (t.prepare('INSERT OR IGNORE INTO things VALUES (?, ?, ?, ?)').run(...row).changes === 1)
          return { key: row.slice(0, 2).map(num), kind: 'extra' as const };
      }
    }
    const key = rows[tamper.pick % Math.max(rows.length, 1)]?.slice(0, 2);
    if (key === undefined) return undefined;
    if (tamper.how === 'delete') {
      t.prepare('DELETE FROM things WHERE id = ? AND cat = ? COLLATE BINARY').run(...key);
      return { key: key.map(num), kind: 'missing' as const };
    }
    t.prepare("UPDATE things SET name = 'tampered' WHERE id = ? AND cat = ? COLLATE BINARY").run(...key);
    return { key: key.map(num), kind: 'different' as const };
  } finally {
    t.close();
  }
}
