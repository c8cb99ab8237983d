// tables and columns named __proto__, constructor, toString, hasOwnProperty: export -> import (JSONL, segment) and publish -> subscribe equal sync
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { enable } from '../../src/capture/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, dumpTables, syncByLibrary, sourceSeq, scalar } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from '../broker/support/broker.ts';

/*
 * Names that are also the names of Object.prototype's properties. z.record
 * leaves a "__proto__" key out of what it returns, and `obj[name] = v` on a
 * plain object sets its prototype (or does nothing) for "__proto__" and
 * reads an inherited function for "constructor" and the like: each path
 * that carries rows or per-table counts as an object keyed by names must
 * keep them. The values of the __proto__ columns are of every storage class
 * (a BLOB, an int64 and a REAL are objects in the JSONL encoding).
 */

const TABLES = ['__proto__', 'constructor', 't'];

const SCHEMA = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript('''
CREATE TABLE t (id INTEGER PRIMARY KEY, "__proto__" TEXT, "constructor" TEXT, "toString" TEXT, "hasOwnProperty" BLOB, "valueOf" REAL);
CREATE TABLE "__proto__" ("__proto__" TEXT PRIMARY KEY, "constructor" INTEGER, "toString" ANY) WITHOUT ROWID;
CREATE TABLE "constructor" (id INTEGER PRIMARY KEY, "__proto__" BLOB, "hasOwnProperty" TEXT);
INSERT INTO t VALUES (1, 'PV', 'CV', 'SV', x'00ff', 1.5);
INSERT INTO t VALUES (2, x'00ff', NULL, 'a', NULL, NULL);
INSERT INTO t VALUES (3, 9223372036854775807, 'c', NULL, x'', -0.0);
INSERT INTO "__proto__" VALUES ('k1', 1, 'one'), ('k2', 2, x'ab');
INSERT INTO "constructor" VALUES (1, x'0102', 'h'), (2, NULL, 'i');
''')
con.commit()
`;

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("INSERT INTO t VALUES (4, 2.5, 'c4', 's4', x'04', 4.0)")
con.execute("UPDATE t SET \\"__proto__\\" = x'beef', \\"toString\\" = 'changed' WHERE id = 1")
con.execute("UPDATE t SET \\"__proto__\\" = 'text again', id = 20 WHERE id = 2")
con.execute("DELETE FROM t WHERE id = 3")
con.commit()
con.execute("INSERT INTO \\"__proto__\\" VALUES ('k3', 3, 1.25)")
con.execute("UPDATE \\"__proto__\\" SET \\"__proto__\\" = 'k1 moved', \\"constructor\\" = 10 WHERE \\"__proto__\\" = 'k1'")
con.execute("DELETE FROM \\"__proto__\\" WHERE \\"__proto__\\" = 'k2'")
con.commit()
con.execute("INSERT INTO \\"constructor\\" VALUES (3, 7, 'j')")
con.execute("UPDATE \\"constructor\\" SET \\"__proto__\\" = NULL, \\"hasOwnProperty\\" = 'h2' WHERE id = 1")
con.execute("DELETE FROM \\"constructor\\" WHERE id = 2")
con.commit()
`;

const nats = natsForFile();
let dir: string;
let src: string;
let jsonl: string;
let segs: string;
let syncedDump: Record<string, string[]>;
const at = (f: string) => path.join(dir, f);

/** The synced target's projections (a table named __proto__ gets the default name __5f_5fproto_5f_5f), active at the source's seq. */
function projected(): [string, string, number][] {
  const names = JSON.parse(
    String(scalar(at('synced.db'), 'SELECT json_group_array(name) FROM (SELECT name FROM main._sluice_projections ORDER BY name)')),
  ) as string[];
  expect(names).toHaveLength(TABLES.length);
  return names.map((n): [string, string, number] => [n, 'active', sourceSeq(src)]).sort();
}

/** Exports the source to the JSONL file and the segment folder, and publishes it to the nats-server. */
async function exportBoth(): Promise<void> {
  const pub = await runCliAsync(['publish', src, '--nats', nats.server().url, '--json']);
  expect(pub.status, pub.stderr).toBe(0);
  for (const args of [
    ['--out', jsonl],
    ['--out', segs, '--format', 'segment'],
  ]) {
    const r = await runCliAsync(['export', src, ...args, '--json']);
    expect(r.status, r.stderr).toBe(0);
  }
}

beforeAll(async () => {
  dir = makeDir();
  src = at('app.db');
  jsonl = at('app.jsonl');
  segs = at('segments');
  runPython(SCHEMA, [src]);
  const db = openDatabase(src);
  try {
    enable(db, TABLES);
  } finally {
    db.close();
  }
  await exportBoth();
  runPython(WRITER, [src]);
  await exportBoth();
  expect(await syncByLibrary(src, at('synced.db'))).toBe(0);
  syncedDump = dumpTables(at('synced.db'));
}, 60_000);
afterAll(() => removeDir(dir));

describe('names of Object.prototype properties', () => {
  test('the synced target holds every table and column of the source', () => {
    expect(Object.keys(syncedDump)).toEqual(TABLES);
    expect(dumpTables(src, TABLES)).toEqual(syncedDump);
    expect(syncedDump.t).toHaveLength(3);
    expect(syncedDump.__proto__).toHaveLength(2);
  });

  test('the JSONL file carries the __proto__ keys of rows and of the snapshot counts', () => {
    const lines = fs
      .readFileSync(jsonl, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const snapshot = lines.find((l) => l.type === 'snapshot') as { rows: Record<string, number> };
    expect(Object.entries(snapshot.rows).sort()).toEqual([
      ['__proto__', 2],
      ['constructor', 2],
      ['t', 3],
    ]);
    const row = lines.find((l) => l.type === 'row' && l.table === 't') as { row: Record<string, unknown> };
    expect(Object.keys(row.row)).toEqual(['id', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']);
  });

  test('export -> import (JSONL) equals sync', async () => {
    const r = await runCliAsync(['import', at('imported.db'), jsonl, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const rep = parseJson(r, S.importOutput);
    expect(rep.projections.map((p) => [p.name, p.state, p.seq]).sort()).toEqual(projected());
    expect(dumpTables(at('imported.db'))).toEqual(syncedDump);
  });

  test('export --format segment -> import equals sync', async () => {
    const r = await runCliAsync(['import', at('from-segments.db'), segs, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const rep = parseJson(r, S.importOutput);
    expect(rep.projections.map((p) => [p.name, p.state, p.seq]).sort()).toEqual(projected());
    expect(dumpTables(at('from-segments.db'))).toEqual(syncedDump);
  });

  test('publish -> subscribe through nats-server equals sync', async () => {
    const url = nats.server().url;
    const sub = await runCliAsync(['subscribe', at('sub.db'), '--nats', url, '--source', sourceIdOf(src), '--json']);
    expect(sub.status, sub.stderr).toBe(0);
    const rep = parseJson(sub, S.subscribeOutput);
    expect(rep).toMatchObject({ started: 'snapshot', batchesSkipped: 0 });
    expect(rep.batchesApplied).toBeGreaterThan(0);
    expect(rep.projections.map((p) => [p.name, p.state, p.seq]).sort()).toEqual(projected());
    expect(dumpTables(at('sub.db'))).toEqual(syncedDump);
  });
});
