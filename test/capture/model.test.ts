import fc from 'fast-check';
import { test, expect, describe } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { openDatabase, RawText, placeholderFor, sameValue, toBindable, type SqlValue } from '../../src/sqlite/index.ts';
import { journalEvents, cell, type Cell } from '../support/journal.ts';

/*
 * Model-based: random writes (inserts, updates that may or may not change a
 * byte, key changes, deletes, rolled-back batches) against a captured table
 * and a Map. After every command the new journal events must be exactly
 * what the model predicts, image for image.
 */

type Row = { v: SqlValue; n: string };
type Cmd =
  | { kind: 'insert'; id: number; row: Row }
  | { kind: 'update'; id: number; row: Row }
  | { kind: 'rekey'; id: number; to: number }
  | { kind: 'delete'; id: number }
  /** Rewrites row `id` with a near-identical value: the same, another class of the same number or bytes, or another case. */
  | { kind: 'morph'; id: number; how: 0 | 1 | 2 | 3 }
  | { kind: 'rollback'; cmds: Cmd[] };

// A small pool, so that updates often write what is already there.
const value: fc.Arbitrary<SqlValue> = fc.constantFrom<SqlValue>(
  null,
  1n,
  1,
  '1',
  '',
  new Uint8Array(),
  Uint8Array.from([0x41]),
  'A',
  'a',
  new RawText(Uint8Array.from([0xff, 0x41])),
  new RawText(Uint8Array.from([0xfe, 0x41])),
  -(2n ** 63n),
  2n ** 63n - 1n,
  0.1 + 0.2,
  0.3,
  -0.5,
);
const row: fc.Arbitrary<Row> = fc.record({ v: value, n: fc.constantFrom('abc', 'ABC', 'Abc', '') });
const id = fc.integer({ min: 1, max: 4 });
const simple: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('insert' as const), id, row }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('update' as const), id, row }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rekey' as const), id, to: id }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), id }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('morph' as const), id, how: fc.constantFrom(0 as const, 1 as const, 2 as const, 3 as const) }),
  },
);
const command: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 5, arbitrary: simple },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rollback' as const), cmds: fc.array(simple, { maxLength: 4 }) }) },
);

function cellOf(v: SqlValue): Cell {
  if (v === null) return cell.null();
  if (typeof v === 'bigint') return cell.int(v);
  if (typeof v === 'number') return cell.real(v);
  if (typeof v === 'string') return cell.text(v);
  if (v instanceof RawText) return cell.text(v.bytes);
  return cell.blob(v);
}
const image = (k: number, r: Row) => [cell.int(k), cellOf(r.v), cell.text(r.n)];

type Expected = { op: string; before?: Cell[]; after?: Cell[] };

function morph(r: Row, how: 0 | 1 | 2 | 3): Row {
  const v = r.v;
  if (how === 1)
    return {
      ...r,
      v: typeof v === 'bigint' ? Number(v) : typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 53 ? BigInt(v) : v,
    };
  if (how === 2)
    return {
      ...r,
      v:
        typeof v === 'string'
          ? Buffer.from(v)
          : v instanceof RawText
            ? Uint8Array.from(v.bytes)
            : v instanceof Uint8Array
              ? new RawText(Uint8Array.from(v))
              : v,
    };
  if (how === 3) return { ...r, n: r.n === r.n.toUpperCase() ? r.n.toLowerCase() : r.n.toUpperCase() };
  return r;
}

/** A morph becomes a plain update of the row as it is now; other commands are unchanged. */
function resolve(model: ReadonlyMap<number, Row>, c: Cmd): Cmd {
  if (c.kind !== 'morph') return c;
  const old = model.get(c.id);
  return old === undefined ? { kind: 'delete', id: c.id } : { kind: 'update', id: c.id, row: morph(old, c.how) };
}

/** Applies a command to the model and returns the events capture must journal. */
function applyToModel(model: Map<number, Row>, cmd: Cmd): Expected[] {
  const c = resolve(model, cmd);
  switch (c.kind) {
    case 'insert':
      if (model.has(c.id)) return [];
      model.set(c.id, c.row);
      return [{ op: 'insert', after: image(c.id, c.row) }];
    case 'update': {
      const old = model.get(c.id);
      if (old === undefined) return [];
      model.set(c.id, c.row);
      if (sameValue(old.v, c.row.v) && old.n === c.row.n) return [];
      return [{ op: 'update', before: image(c.id, old), after: image(c.id, c.row) }];
    }
    case 'rekey': {
      const old = model.get(c.id);
      if (old === undefined || model.has(c.to) || c.to === c.id) return [];
      model.delete(c.id);
      model.set(c.to, old);
      return [{ op: 'update', before: image(c.id, old), after: image(c.to, old) }];
    }
    case 'delete': {
      const old = model.get(c.id);
      if (old === undefined) return [];
      model.delete(c.id);
      return [{ op: 'delete', before: image(c.id, old) }];
    }
    case 'rollback':
    case 'morph':
      return [];
  }
}

function applyToDb(db: ReturnType<typeof openDatabase>, model: Map<number, Row>, cmd: Cmd): void {
  const c = resolve(model, cmd);
  switch (c.kind) {
    case 'insert':
      if (!model.has(c.id)) db.prepare(`INSERT INTO t VALUES (?, ${placeholderFor(c.row.v)}, ?)`).run(c.id, toBindable(c.row.v), c.row.n);
      return;
    case 'update':
      db.prepare(`UPDATE t SET v = ${placeholderFor(c.row.v)}, n = ? WHERE id = ?`).run(toBindable(c.row.v), c.row.n, c.id);
      return;
    case 'rekey':
      if (!model.has(c.to)) db.prepare('UPDATE t SET id = ? WHERE id = ?').run(c.to, c.id);
      return;
    case 'delete':
      db.prepare('DELETE FROM t WHERE id = ?').run(c.id);
      return;
    case 'rollback': {
      db.exec('BEGIN');
      const scratch = new Map(model);
      for (const inner of c.cmds) {
        applyToDb(db, scratch, inner);
        applyToModel(scratch, inner);
      }
      db.exec('ROLLBACK');
      return;
    }
    case 'morph':
      return;
  }
}

const ins = (v: SqlValue, n = 'abc'): Cmd => ({ kind: 'insert', id: 1, row: { v, n } });
const morph1 = (how: 0 | 1 | 2 | 3): Cmd => ({ kind: 'morph', id: 1, how });
// Always run: the cases that only byte-exact comparison gets right.
const EXAMPLES: Cmd[][] = [
  [ins(1n), morph1(1), morph1(1)], // 1 -> 1.0 -> 1
  [ins(-(2n ** 63n)), morph1(1)], // int64 min -> the same number as REAL
  [ins('A'), morph1(2), morph1(2)], // TEXT -> BLOB of the same bytes -> TEXT
  [
    ins(new RawText(Uint8Array.from([0xff, 0x41]))),
    morph1(2),
    { kind: 'update', id: 1, row: { v: new RawText(Uint8Array.from([0xfe, 0x41])), n: 'abc' } },
  ],
  [ins(''), morph1(2), { kind: 'update', id: 1, row: { v: null, n: 'abc' } }], // '' -> X'' -> NULL
  [ins(null), morph1(3), morph1(3), morph1(0)], // NOCASE case flips, then a no-op
  [ins(1n), { kind: 'rollback', cmds: [morph1(1), { kind: 'rekey', id: 1, to: 2 }] }, { kind: 'rekey', id: 1, to: 3 }],
];

describe('journal against a model', () => {
  test('random writes journal exactly the events a byte-exact model predicts', () => {
    fc.assert(
      fc.property(fc.array(command, { minLength: 5, maxLength: 30 }), (cmds) => {
        const db = openDatabase(':memory:');
        try {
          db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v, n TEXT COLLATE NOCASE)');
          enable(db, ['t']);
          const model = new Map<number, Row>();
          let seen = 0;
          for (const c of cmds) {
            applyToDb(db, model, c);
            const expected = applyToModel(model, c);
            const got = journalEvents(db).slice(seen);
            seen += got.length;
            expect(got.map(({ op, before, after }) => ({ op, ...(before ? { before } : {}), ...(after ? { after } : {}) }))).toEqual(
              expected,
            );
          }
          const rows = (db.prepare('SELECT count(*) AS n FROM t').get() as { n: bigint }).n;
          expect(Number(rows)).toBe(model.size);
        } finally {
          db.close();
        }
      }),
      { numRuns: 80, examples: EXAMPLES.map((e) => [e]) },
    );
  });
});
