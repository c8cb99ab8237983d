// an export line with an INTEGER outside SQLite's 64-bit range is refused with IMPORT_BAD_VALUE at its line, naming the column
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { fromJsonValue, jsonValueSchema } from '../../src/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { EDIT, segmentsOf } from './support/segment-files.ts';
import { runCliAsync, makeDir, removeDir, scalar } from '../cli/support/cli.ts';

/*
 * A file written by another program (its section digests made to match)
 * whose value {"$i": "99999999999999999999"} passed the value schema's
 * digits-only check: import bound it as a bigint and failed with
 * "sluice: INTERNAL: The bound string, buffer, or bigint is too big", no
 * file, line or column. An INTEGER is 64 bits: the schema now refuses such
 * a value, and import says IMPORT_BAD_VALUE at FILE:LINE, naming the table
 * and column (an image's, a snapshot row's, or an event's key), with
 * nothing of the line's batch or snapshot committed. The extremes of the
 * range still import exactly. A segment's values are SQLite's own, but a
 * keys-mode event's keys are JSON text in the same encoding: the segment's
 * check now decodes them as its batch would, and refuses one that is not a
 * key of its table, naming the segment, table and key column.
 */

/** Another program's edit of a segment's digest (argv[2]) in its meta (argv[1] the file). */
const SET_DIGEST = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE segment SET value = ? WHERE name = 'digest'", (sys.argv[2],))
con.commit()
con.close()
`;

/** `file` with `find` replaced by `replace` (bytes, once each line), and every section's count and digest made again. */
const REWRITE = `
import json, hashlib, sys
src, out, find, replace = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode()
lines = open(src, 'rb').read().split(b'\\n')[:-1]
res = []; h = hashlib.sha256(); n = 0; hit = 0
for l in lines:
    if find in l:
        l = l.replace(find, replace); hit += 1
    o = json.loads(l); t = o.get('type')
    if t in ('snapshot', 'batch'):
        o['digest'] = h.hexdigest(); h = hashlib.sha256()
        if t == 'batch': o['count'] = n
        n = 0; l = json.dumps(o, separators=(',', ':')).encode()
    else:
        h.update(l + b'\\n'); n += (t is None)
    res.append(l)
if hit == 0: sys.exit('nothing replaced')
open(out, 'wb').write(b'\\n'.join(res) + b'\\n')
`;

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

/** A source with table t (id 1 in its snapshot, id 2 inserted after it), exported to one file: snapshot, then a batch. */
async function exported(): Promise<{ src: string; file: string }> {
  const src = at('a.db');
  runSqliteCli(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v, w); INSERT INTO t VALUES(1, 'a', 10);");
  expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
  const file = at('f.jsonl');
  expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
  runSqliteCli(src, "INSERT INTO t VALUES(2, 'b', 20)");
  expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
  return { src, file };
}

function rewritten(file: string, name: string, find: string, replace: string): string {
  const out = at(name);
  runPython(REWRITE, [file, out, find, replace]);
  return out;
}

/** The line number (1-based) of the first line of `file` holding `text`. */
function lineOf(file: string, text: string): number {
  return (
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .findIndex((l) => l.includes(text)) + 1
  );
}

const TOO_BIG = '{"$i":"99999999999999999999"}';
const TOO_SMALL = '{"$i":"-9223372036854775809"}';

describe('an INTEGER outside the 64-bit range', () => {
  test('in an event image: IMPORT_BAD_VALUE at its line naming the column, the snapshot before it kept', async () => {
    const { file } = await exported();
    const bad = rewritten(file, 'image.jsonl', '"after":{"id":2,"v":"b","w":20}', `"after":{"id":2,"v":"b","w":${TOO_BIG}}`);
    const tgt = at('image.db');
    const r = await runCliAsync(['import', tgt, bad]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).not.toContain('INTERNAL');
    expect(r.stderr).toContain('IMPORT_BAD_VALUE');
    expect(r.stderr).toContain(`${bad}:${lineOf(bad, TOO_BIG)}:`);
    expect(r.stderr).toContain('column w of table t');
    expect(r.stderr).toContain('99999999999999999999');
    expect(r.stderr).toContain('64-bit');
    // The snapshot (its own transaction, before the bad batch) is committed; nothing of the batch is.
    expect(scalar(tgt, "SELECT group_concat(id || '=' || v || '=' || w) FROM t")).toBe('1=a=10');
  });

  test("in an event's key: IMPORT_BAD_VALUE naming the key column", async () => {
    const { file } = await exported();
    const bad = rewritten(file, 'key.jsonl', '"key":[2]', `"key":[${TOO_SMALL}]`);
    const r = await runCliAsync(['import', at('key.db'), bad]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain('IMPORT_BAD_VALUE');
    expect(r.stderr).toContain(`${bad}:${lineOf(bad, TOO_SMALL)}:`);
    expect(r.stderr).toContain('key column id of table t');
    expect(r.stderr).toContain('-9223372036854775809');
  });

  test('in a snapshot row: IMPORT_BAD_VALUE at its line, nothing committed', async () => {
    const { file } = await exported();
    const bad = rewritten(file, 'row.jsonl', '"row":{"id":1,"v":"a","w":10}', `"row":{"id":1,"v":"a","w":${TOO_BIG}}`);
    const tgt = at('row.db');
    const r = await runCliAsync(['import', tgt, bad]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain('IMPORT_BAD_VALUE');
    expect(r.stderr).toContain(`${bad}:${lineOf(bad, TOO_BIG)}:`);
    expect(r.stderr).toContain('column w of table t');
    expect(fs.existsSync(tgt) ? scalar(tgt, "SELECT count(*) FROM sqlite_schema WHERE name = 't'") : 0n).toBe(0n);
  });

  test('the extremes of the range import exactly', async () => {
    const { src, file } = await exported();
    const good = rewritten(
      file,
      'extremes.jsonl',
      '"after":{"id":2,"v":"b","w":20}',
      '"after":{"id":2,"v":{"$i":"-9223372036854775808"},"w":{"$i":"9223372036854775807"}}',
    );
    const tgt = at('extremes.db');
    const r = await runCliAsync(['import', tgt, good]);
    expect(r.status, r.stderr).toBe(0);
    expect(scalar(tgt, 'SELECT v FROM t WHERE id = 2')).toBe(-9223372036854775808n);
    expect(scalar(tgt, 'SELECT w FROM t WHERE id = 2')).toBe(9223372036854775807n);
    expect(scalar(src, 'SELECT count(*) FROM t')).toBe(2n);
  });

  test('the value schema and fromJsonValue refuse it (BAD_VALUE), and take the extremes', () => {
    for (const digits of ['9223372036854775808', '-9223372036854775809', '99999999999999999999']) {
      expect(jsonValueSchema.safeParse({ $i: digits }).success).toBe(false);
      expect(() => fromJsonValue({ $i: digits })).toThrow(expect.objectContaining({ code: 'BAD_VALUE' }));
    }
    expect(fromJsonValue({ $i: '9223372036854775807' })).toBe(9223372036854775807n);
    expect(fromJsonValue({ $i: '-9223372036854775808' })).toBe(-9223372036854775808n);
    expect(fromJsonValue({ $i: '-0000000000000000000000009' })).toBe(-9n);
  });

  test("in a segment's keys-mode event key: refused by the segment's check, naming it, the table and the key column", async () => {
    const src = at('k.db');
    runSqliteCli(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1, 'a');");
    expect((await runCliAsync(['enable', src, 't', '--mode', 'keys'])).status).toBe(0);
    const folder = at('segs');
    expect((await runCliAsync(['export', src, '--out', folder, '--format', 'segment'])).status).toBe(0);
    runSqliteCli(src, "UPDATE t SET v = 'b' WHERE id = 1");
    expect((await runCliAsync(['export', src, '--out', folder, '--format', 'segment'])).status).toBe(0);
    const [snap, events] = segmentsOf(folder) as [string, string];
    const bad = at('bad.segment');
    fs.copyFileSync(events, bad);
    runPython(EDIT, [bad, `UPDATE segment_events_1 SET keys = replace(keys, '"key":[1]', '"key":[${TOO_BIG}]');`]);
    // Its digest made again (docs/segment.md: sha256 of every page but the first and the meta's).
    const db = openDatabase(bad, { readonly: true });
    let meta: Set<number>;
    let size: number;
    try {
      expect(db.prepare('SELECT keys FROM segment_events_1').pluck().get()).toContain(TOO_BIG);
      meta = new Set((db.prepare("SELECT pageno FROM dbstat WHERE name = 'segment'").pluck().all() as number[]).map(Number));
      size = Number(db.pragma('page_size', { simple: true }));
    } finally {
      db.close();
    }
    const bytes = fs.readFileSync(bad);
    const h = createHash('sha256');
    for (let p = 2; p <= bytes.length / size; p++) if (!meta.has(p)) h.update(bytes.subarray((p - 1) * size, p * size));
    runPython(SET_DIGEST, [bad, h.digest('hex')]);
    const tgt = at('k-target.db');
    expect((await runCliAsync(['import', tgt, snap])).status).toBe(0);
    const r = await runCliAsync(['import', tgt, bad]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain('IMPORT_SEGMENT_MISMATCH');
    expect(r.stderr).toContain(`Segment ${bad}:`);
    expect(r.stderr).toContain('table t: key column id has {"$i":"99999999999999999999"}');
    expect(r.stderr).toContain('64-bit');
  });
});
