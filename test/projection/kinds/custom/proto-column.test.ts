// a custom handler's rows hold a column named __proto__ (and constructor, toString) as their own, under sync and import, and its ctx.tables a table of that name
import path from 'node:path';
import { test, expect, describe, runPython } from '../../../support/fixtures.ts';
import { Syncer } from '../../../../src/apply/sync/index.ts';
import { importFile } from '../../../../src/export/index.ts';
import type { ChangeEvent, Row } from '../../../../src/feed/index.ts';
import type { CustomHandler } from '../../../../src/projection/index.ts';
import { makeSource, exportBothFormats } from '../../../apply/support/target.ts';
import { dumpTables } from '../../../cli/support/cli.ts';

/*
 * A row handed to a handler is a plain object of the row's columns; a column
 * named __proto__ must be one of its own keys holding its value (not the
 * object's prototype, not missing), whatever the value's type, and one named
 * constructor or toString its value, not Object.prototype's function.
 */

const SCHEMA = `CREATE TABLE t (id INTEGER PRIMARY KEY, "__proto__", "constructor" TEXT, "toString" TEXT);
INSERT INTO t VALUES (1, 'PV', 'CV', 'SV'), (2, x'00ff', NULL, 'a'), (3, 9223372036854775807, 'c', NULL);`;

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("INSERT INTO t VALUES (4, 2.5, 'c4', 's4')")
con.execute("UPDATE t SET \\"__proto__\\" = x'beef', \\"toString\\" = 'changed' WHERE id = 1")
con.execute("DELETE FROM t WHERE id = 3")
con.commit()
`;

function recorder(): { handler: CustomHandler; rows: Row[]; events: ChangeEvent[] } {
  const rows: Row[] = [];
  const events: ChangeEvent[] = [];
  const handler: CustomHandler = {
    version: '1',
    init(given) {
      rows.push(...given);
    },
    apply(event) {
      events.push(event);
    },
  };
  return { handler, rows, events };
}

/** A row's own properties as [key, value] pairs, a BLOB as X'hex' (sync hands a Buffer, import a Uint8Array). */
function entries(row: Row): [string, unknown][] {
  return Object.entries(row).map(([k, v]) => [k, v instanceof Uint8Array ? `X'${Buffer.from(v).toString('hex')}'` : v]);
}

/** The row's own properties, and its prototype. */
function own(row: Row | null): { entries: [string, unknown][]; proto: unknown } | null {
  return row === null ? null : { entries: entries(row), proto: Object.getPrototypeOf(row) };
}

function expectRows(r: ReturnType<typeof recorder>): void {
  expect(r.rows.map((row) => Object.getPrototypeOf(row))).toEqual([Object.prototype, Object.prototype, Object.prototype]);
  expect(r.rows.map(entries)).toEqual([
    [
      ['id', 1n],
      ['__proto__', 'PV'],
      ['constructor', 'CV'],
      ['toString', 'SV'],
    ],
    [
      ['id', 2n],
      ['__proto__', "X'00ff'"],
      ['constructor', null],
      ['toString', 'a'],
    ],
    [
      ['id', 3n],
      ['__proto__', 9223372036854775807n],
      ['constructor', 'c'],
      ['toString', null],
    ],
  ]);
  const byOp = (op: string) => r.events.find((e) => e.op === op) as ChangeEvent;
  expect(r.events.map((e) => e.op)).toEqual(['insert', 'update', 'delete']);
  expect(own(byOp('insert').after)).toEqual({
    entries: [
      ['id', 4n],
      ['__proto__', 2.5],
      ['constructor', 'c4'],
      ['toString', 's4'],
    ],
    proto: Object.prototype,
  });
  const update = byOp('update');
  expect(own(update.before)?.entries).toEqual([
    ['id', 1n],
    ['__proto__', 'PV'],
    ['constructor', 'CV'],
    ['toString', 'SV'],
  ]);
  expect(own(update.after)).toEqual({
    entries: [
      ['id', 1n],
      ['__proto__', "X'beef'"],
      ['constructor', 'CV'],
      ['toString', 'changed'],
    ],
    proto: Object.prototype,
  });
  expect(Buffer.from(update.after?.__proto__ as Uint8Array).toString('hex')).toBe('beef');
  expect(own(byOp('delete').before)?.entries).toEqual([
    ['id', 3n],
    ['__proto__', 9223372036854775807n],
    ['constructor', 'c'],
    ['toString', null],
  ]);
}

describe('a custom handler and a column named __proto__', () => {
  test('gets it in its init rows and its events, under sync and under import of JSONL and segments', async ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['t']);
    const jsonl = path.join(tmp, 'app.jsonl');
    const segs = path.join(tmp, 'segments');
    exportBothFormats(src.file, jsonl, segs);
    const synced = recorder();
    const s = await Syncer.open(src.file, path.join(tmp, 'synced.db'), {
      projections: [{ name: 'log', source: 't', kind: 'custom', handler: synced.handler }],
    });
    try {
      await s.runOnce();
      runPython(WRITER, [src.file]);
      await s.runOnce();
    } finally {
      s.close();
    }
    expectRows(synced);

    exportBothFormats(src.file, jsonl, segs);
    for (const [name, file] of [
      ['jsonl', jsonl],
      ['segments', segs],
    ] as const) {
      const r = recorder();
      const rep = await importFile(path.join(tmp, `${name}.db`), file, {
        projections: [{ name: 'log', source: 't', kind: 'custom', handler: r.handler }],
      });
      expect(
        rep.projections.map((p) => [p.name, p.state]),
        name,
      ).toEqual([['log', 'active']]);
      expectRows(r);
    }
  });

  test('ctx.tables holds declared tables named __proto__ and constructor as its own names', async ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['t']);
    const seen: [string, unknown][][] = [];
    const handler: CustomHandler = {
      version: '1',
      async init(rows, { db, tables }) {
        seen.push(Object.entries(tables));
        const ids = [...rows].map((r) => Number(r.id));
        for (const name of ['__proto__', 'constructor']) {
          const table = tables[name] as string;
          await db.schema
            .createTable(table)
            .ifNotExists()
            .addColumn('id', 'integer', (c) => c.primaryKey())
            .execute();
          for (const id of ids) await db.insertInto(table).values({ id }).execute();
        }
      },
      apply() {},
    };
    const s = await Syncer.open(src.file, path.join(tmp, 'synced.db'), {
      projections: [{ name: 'log', source: 't', kind: 'custom', handler, tables: ['__proto__', 'constructor'] }],
    });
    try {
      const rep = await s.runOnce();
      expect(rep.projections.map((p) => [p.name, p.state, p.error])).toEqual([['log', 'active', undefined]]);
    } finally {
      s.close();
    }
    // Built beside them (shadow names), then renamed in.
    expect(seen.map((entries) => entries.map(([name, table]) => [name, String(table).endsWith(`__${name}`)]))).toEqual([
      [
        ['__proto__', true],
        ['constructor', true],
      ],
    ]);
    const built = dumpTables(path.join(tmp, 'synced.db'), ['__proto__', 'constructor']);
    expect(Object.entries(built)).toEqual([
      ['__proto__', ['1', '2', '3']],
      ['constructor', ['1', '2', '3']],
    ]);
  });
});
