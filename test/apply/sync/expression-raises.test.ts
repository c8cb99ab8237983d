// a map expression that raises on one source value names the expression, the key and the seq, with a repair that works
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, parseJson } from '../../cli/support/cli.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';

/*
 * json(s) over text that is not JSON raises in SQLite. The application
 * writes such a value with the sqlite3 shell. On an incremental batch the
 * journal keeps the value, so a plain sync can never get past it: the
 * projection is suspended (EXPRESSION_FAILED) naming the column, the key and
 * the seq, and reinit after the fix repairs it. On a first build the source
 * row is read again by the next sync: the failure names the column and the
 * table, and a sync after the fix builds it.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql]);

beforeEach(() => {
  dir = makeDir();
  src = at('app.db');
  tgt = at('cache.db');
  sqlite3(src, `CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT); INSERT INTO t VALUES (1, '{}');`);
  fs.writeFileSync(at('m.json'), JSON.stringify({ name: 'm', source: 't', kind: 'map', columns: { id: 'id', j: { expr: 'json(s)' } } }));
});
afterEach(() => removeDir(dir));

describe('a map expression that raises on one value', () => {
  test('in a batch: EXPRESSION_FAILED names the column, the key and the seq; fixing the row and reinit repairs it', async () => {
    expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
    expect((await runCliAsync(['sync', src, tgt, '--projection', at('m.json')])).status).toBe(0);
    sqlite3(src, `INSERT INTO t VALUES (2, 'not json')`);
    const r = await runCliAsync(['sync', src, tgt]);
    expect(r.status, r.stderr).toBe(3);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/SQLITE_ERROR/);
    const h = await runCliAsync(['health', tgt, '--json']);
    expect(h.status).toBe(3);
    const p = parseJson(h, S.healthOutput).projections.find((x) => x.name === 'm');
    expect(p?.reason).toBe('EXPRESSION_FAILED');
    expect(p?.detail).toMatchObject({ expression: 'column j', key: [2], seq: 1 });
    expect(JSON.stringify(p?.detail)).toMatch(/column j \(json\(s\)\) raised \\"malformed JSON\\" on the image of key \[2\] of t at seq 1/);
    sqlite3(src, `UPDATE t SET s = '[]' WHERE id = 2`);
    // A plain sync does not get past the journal's value; the repair health names does.
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(3);
    expect((await runCliAsync(['reinit', src, tgt, 'm'])).status).toBe(0);
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
    expect((await runCliAsync(['verify', src, tgt])).status).toBe(0);
  });

  test('in a first build: the failure names the column and the table, not a bare SQLite error; a sync after the fix builds it', async () => {
    sqlite3(src, `INSERT INTO t VALUES (2, 'not json')`);
    expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
    const r = await runCliAsync(['sync', src, tgt, '--projection', at('m.json')]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/EXPRESSION_FAILED: .*column j \(json\(s\)\) raised "malformed JSON" on a row of t/);
    expect(r.stderr).not.toMatch(/SQLITE_ERROR/);
    sqlite3(src, `UPDATE t SET s = '[]' WHERE id = 2`);
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
  });
});
