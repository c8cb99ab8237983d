// a segment's check refuses each row rule broken (ops, ts, keys, masks, integer keys, per-batch counts, events outside every batch, snapshot rows) with IMPORT_SEGMENT_MISMATCH, its digest made to match
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { checkSegment } from '../../src/export/index.ts';
import { segmentsOf } from './support/segment-files.ts';
import { runCliAsync, makeDir, removeDir } from '../cli/support/cli.ts';

/*
 * Each rule of docs/segment.md "Checks", item 3, that reads the rows of a
 * segment's tables, broken one at a time by another program (Python's
 * sqlite3) in a copy of a real segment whose page digest is then made
 * again: the check must reach the rows and refuse the copy with
 * IMPORT_SEGMENT_MISMATCH, saying which rule. The segments: a snapshot of
 * t (images, INTEGER PRIMARY KEY) and k (keys mode), then their events in
 * batches of 2 events.
 */

/** argv[1] the file, argv[2] a SQL script; argv[3] (optional) a table whose `op` loses its NOT NULL for the script, then gets it back. */
const EDIT_PAST_NOT_NULL = `
import sqlite3, sys
f, script = sys.argv[1], sys.argv[2]
table = sys.argv[3] if len(sys.argv) > 3 else None
def schema(frm, to):
    con = sqlite3.connect(f)
    con.execute('PRAGMA writable_schema = ON')
    con.execute('UPDATE sqlite_schema SET sql = replace(sql, ?, ?) WHERE name = ?', (frm, to, table))
    con.commit()
    con.close()
if table: schema('op INTEGER NOT NULL', 'op INTEGER')
con = sqlite3.connect(f)
con.executescript(script)
con.commit()
con.close()
if table: schema('op INTEGER,', 'op INTEGER NOT NULL,')
`;

const SET_DIGEST = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE segment SET value = ? WHERE name = 'digest'", (sys.argv[2],))
con.commit()
con.close()
`;

let dir: string;
let snap: string;
let events: string;
const at = (f: string) => path.join(dir, f);

/** The number of table `name` in segment `file`. */
function tno(file: string, name: string): number {
  const db = openDatabase(file, { readonly: true });
  try {
    return Number(db.prepare('SELECT tno FROM segment_tables WHERE name = ?').pluck().get(name));
  } finally {
    db.close();
  }
}

/** A copy of `from` edited by `sql` (`opOf`: the events table whose op may be set NULL), its digest made again. */
function edited(from: string, name: string, sql: string, opOf?: string): string {
  const f = at(`${name}.segment`);
  fs.copyFileSync(from, f);
  runPython(EDIT_PAST_NOT_NULL, [f, sql, ...(opOf === undefined ? [] : [opOf])]);
  // Its digest made again (docs/segment.md: sha256 of every page but the first and the meta's).
  const db = openDatabase(f, { readonly: true });
  let meta: Set<number>;
  let size: number;
  try {
    meta = new Set((db.prepare("SELECT pageno FROM dbstat WHERE name = 'segment'").pluck().all() as number[]).map(Number));
    size = Number(db.pragma('page_size', { simple: true }));
  } finally {
    db.close();
  }
  const bytes = fs.readFileSync(f);
  const h = createHash('sha256');
  for (let p = 2; p <= bytes.length / size; p++) if (!meta.has(p)) h.update(bytes.subarray((p - 1) * size, p * size));
  runPython(SET_DIGEST, [f, h.digest('hex')]);
  return f;
}

function refused(file: string, says: string): void {
  let err: unknown;
  try {
    checkSegment(file);
  } catch (e) {
    err = e;
  }
  expect(err).toMatchObject({ code: 'IMPORT_SEGMENT_MISMATCH' });
  expect((err as Error).message).toContain(`Segment ${file}:`);
  expect((err as Error).message).toContain(says);
}

beforeAll(async () => {
  dir = makeDir();
  const src = at('app.db');
  runSqliteCli(
    src,
    "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER); CREATE TABLE k (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3); INSERT INTO k VALUES (1, 'x'), (2, 'y');",
  );
  for (const args of [
    ['enable', src, 't'],
    ['enable', src, 'k', '--mode', 'keys'],
  ]) {
    const r = await runCliAsync(args);
    expect(r.status, r.stderr).toBe(0);
  }
  const folder = at('segs');
  const r1 = await runCliAsync(['export', src, '--out', folder, '--format', 'segment']);
  expect(r1.status, r1.stderr).toBe(0);
  runSqliteCli(
    src,
    "INSERT INTO t VALUES (4, 'd', 4); UPDATE t SET name = 'A' WHERE id = 1; UPDATE t SET n = 20 WHERE id = 2; DELETE FROM t WHERE id = 3; INSERT INTO t VALUES (5, 'e', 5); UPDATE k SET v = 'X' WHERE id = 1; INSERT INTO k VALUES (3, 'z');",
  );
  const r2 = await runCliAsync(['export', src, '--out', folder, '--format', 'segment', '--batch', '2']);
  expect(r2.status, r2.stderr).toBe(0);
  [snap, events] = segmentsOf(folder) as [string, string];
});
afterAll(() => removeDir(dir));

describe("a segment's rows, each rule broken: refused by its check", () => {
  test('the segments as written pass, in several batches', () => {
    expect(checkSegment(snap).meta.rows).toBe(5);
    const c = checkSegment(events);
    expect(c.meta.events).toBe(7);
    expect(c.batches.length).toBeGreaterThan(2);
  });

  const ev = (name: string) => `segment_events_${tno(events, name)}`;
  const notWellFormed = (name: string) => `1 events of table ${name} are not well formed`;

  test('an op that is not 1, 2 or 3: 4, 2.5, NULL (past its NOT NULL)', () => {
    const t = ev('t');
    refused(edited(events, 'op4', `UPDATE ${t} SET op = 4 WHERE seq = (SELECT min(seq) FROM ${t});`), notWellFormed('t'));
    refused(edited(events, 'op25', `UPDATE ${t} SET op = 2.5 WHERE seq = (SELECT min(seq) FROM ${t});`), notWellFormed('t'));
    refused(edited(events, 'opnull', `UPDATE ${t} SET op = NULL WHERE seq = (SELECT min(seq) FROM ${t});`, t), notWellFormed('t'));
  });

  test('a ts that is not an integer', () => {
    const t = ev('t');
    refused(edited(events, 'ts', `UPDATE ${t} SET ts = 'noon' WHERE seq = (SELECT max(seq) FROM ${t});`), notWellFormed('t'));
  });

  test("an update's mask that leaves out a column its images change, or is not a mask", () => {
    const t = ev('t');
    refused(edited(events, 'mask0', `UPDATE ${t} SET mask = 0 WHERE op = 2 AND b1 IS NOT a1;`), notWellFormed('t'));
    refused(edited(events, 'mask8', `UPDATE ${t} SET mask = 8 WHERE op = 2 AND b1 IS NOT a1;`), notWellFormed('t'));
  });

  test('a key that is not an integer in its INTEGER PRIMARY KEY: an after-image, a before-image', () => {
    const t = ev('t');
    refused(edited(events, 'akey', `UPDATE ${t} SET a0 = 'four' WHERE op = 1 AND a0 = 4;`), notWellFormed('t'));
    refused(edited(events, 'bkey', `UPDATE ${t} SET b0 = 3.5 WHERE op = 3;`), notWellFormed('t'));
  });

  test("a keys-mode event's keys: not JSON, or not the table's key", () => {
    const k = ev('k');
    refused(edited(events, 'keysjson', `UPDATE ${k} SET keys = '{' WHERE seq = (SELECT min(seq) FROM ${k});`), notWellFormed('k'));
    refused(
      edited(events, 'keysshape', `UPDATE ${k} SET keys = '{"key": [1, 2], "after": true}' WHERE seq = (SELECT min(seq) FROM ${k});`),
      'the keys of its event at seq',
    );
  });

  test("a batch's event count that is not the events in its range", () => {
    refused(
      edited(
        events,
        'batchcount',
        'UPDATE segment_batches SET events = events + 1 WHERE to_seq = (SELECT min(to_seq) FROM segment_batches);',
      ),
      'says 3 events, but 2 are in its range',
    );
  });

  test('an event before the first batch, or after the last, its batch counting one fewer', () => {
    const t = ev('t');
    refused(
      edited(
        events,
        'before',
        `UPDATE ${t} SET seq = (SELECT min(from_seq) FROM segment_batches) WHERE seq = (SELECT min(seq) FROM ${t});
         UPDATE segment_batches SET events = events - 1 WHERE to_seq = (SELECT min(to_seq) FROM segment_batches);`,
      ),
      'some of its events lie outside every batch',
    );
    refused(
      edited(
        events,
        'after',
        `UPDATE segment_batches SET events = events - 1 WHERE to_seq = (SELECT to_seq FROM segment_batches WHERE to_seq >= (SELECT max(seq) FROM ${t}) ORDER BY to_seq LIMIT 1);
         UPDATE ${t} SET seq = seq + 1000 WHERE seq = (SELECT max(seq) FROM ${t});`,
      ),
      'some of its events lie outside every batch',
    );
  });

  test("a table's event count that is not its events", () => {
    refused(
      edited(events, 'tablecount', "UPDATE segment_tables SET events = events + 1 WHERE name = 't';"),
      'table t says it has 6 events, but 5 are there',
    );
  });

  test("a snapshot's rows: one fewer than its count, a key that is not an integer", () => {
    const rows = `segment_rows_${tno(snap, 't')}`;
    refused(edited(snap, 'rowcount', `DELETE FROM ${rows} WHERE c0 = 3;`), 'table t says it has 3 snapshot rows, but 2 are there');
    refused(
      edited(snap, 'rowkey', `UPDATE ${rows} SET c0 = 'two' WHERE c0 = 2;`),
      'a snapshot row of table t has a key that is not an integer',
    );
  });
});
