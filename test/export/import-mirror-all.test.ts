// a target import makes by default stores "*" as sync does, so a later file's snapshot of a table enabled since is mirrored; a table it cannot build is MIRROR_NOT_BUILT, not dropped
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { health } from '../../src/index.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, makeDir, removeDir, scalar, parseJson } from '../cli/support/cli.ts';

/*
 * `sluice import` without --projection makes "a mirror of every table in
 * the file", but stored no "*": the next file of the same source, whose
 * snapshot held a table enabled since (u), had u's rows read and dropped,
 * exit 0, health and verify green, and u never in the target. A target
 * `sync` made with "*" did the same (import never passed "*" on). import
 * now runs the target's projection set by the rule subscribe follows: "*"
 * on a new target, stored in the set, and the stored "*" of any target; so
 * the file's snapshot of u builds u's mirror. A file whose batches carry u
 * with no snapshot of it (exported --since a later export's cursor) cannot
 * build it: u is reported pending, MIRROR_NOT_BUILT, exit 3, instead of its
 * events dropped without a word. A target built from definitions keeps
 * exactly them.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

/** A source capturing t (one.jsonl: its export), then u enabled, both changed, and a new export of both (two.jsonl, with its cursor). */
async function twoFiles(): Promise<{ src: string; one: string; two: string; twoCursor: string }> {
  const src = at('a.db');
  runSqliteCli(
    src,
    "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a'); CREATE TABLE u(id INTEGER PRIMARY KEY, v); INSERT INTO u VALUES(1,'u1');",
  );
  expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
  const one = at('one.jsonl');
  expect((await runCliAsync(['export', src, '--out', one])).status).toBe(0);
  return { src, one, ...(await enableU(src)) };
}

async function enableU(src: string): Promise<{ two: string; twoCursor: string }> {
  expect((await runCliAsync(['enable', src, 'u'])).status).toBe(0);
  runSqliteCli(src, "INSERT INTO u VALUES(2,'u2'); INSERT INTO t VALUES(2,'b');");
  const two = at('two.jsonl');
  const e = await runCliAsync(['export', src, '--out', two, '--json']);
  expect(e.status, e.stderr).toBe(0);
  return { two, twoCursor: (JSON.parse(e.stdout) as { cursor: string }).cursor };
}

const mirrorAllRow = (tgt: string) => scalar(tgt, "SELECT origin FROM _sluice_projection_set WHERE member = '*'");
const rows = (tgt: string, table: string) =>
  scalar(tgt, `SELECT group_concat(id || '=' || v, ',') FROM (SELECT * FROM ${table} ORDER BY id)`);

async function expectMirrored(src: string, tgt: string): Promise<void> {
  expect(rows(tgt, 't')).toBe('1=a,2=b');
  expect(rows(tgt, 'u')).toBe('1=u1,2=u2');
  expect(health(tgt).ok).toBe(true);
  const v = await runCliAsync(['verify', src, tgt]);
  expect(v.status, v.stdout + v.stderr).toBe(0);
}

describe('import runs the target\'s projection set: "*" by default', () => {
  test('a target import made mirrors a table enabled later, from the next file that holds its snapshot', async () => {
    const { src, one, two } = await twoFiles();
    const tgt = at('imp.db');
    expect((await runCliAsync(['import', tgt, one])).status).toBe(0);
    expect(mirrorAllRow(tgt)).toBe('default');
    const r = await runCliAsync(['import', tgt, two, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(
      parseJson(r, S.importOutput)
        .projections.map((p) => `${p.name}:${p.state}`)
        .sort(),
    ).toEqual(['t:active', 'u:active']);
    await expectMirrored(src, tgt);
  });

  test('a target sync made with "*" gets the new table from an imported file that holds its snapshot', async () => {
    const src = at('a.db');
    runSqliteCli(
      src,
      "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a'); CREATE TABLE u(id INTEGER PRIMARY KEY, v); INSERT INTO u VALUES(1,'u1');",
    );
    expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
    const tgt = at('synced.db');
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    expect(mirrorAllRow(tgt)).toBe('default');
    const { two } = await enableU(src);
    const r = await runCliAsync(['import', tgt, two]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    await expectMirrored(src, tgt);
  });

  test('a target an import made before the set was stored (only mirrors, no set table) counts as "*"', async () => {
    const { src, one, two } = await twoFiles();
    const tgt = at('older.db');
    expect((await runCliAsync(['import', tgt, one])).status).toBe(0);
    runSqliteCli(tgt, 'DROP TABLE _sluice_projection_set;');
    const r = await runCliAsync(['import', tgt, two]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(mirrorAllRow(tgt)).toBe('upgraded');
    await expectMirrored(src, tgt);
  });

  test('a file whose batches carry a table with no snapshot of it: MIRROR_NOT_BUILT, exit 3, and the next file with its snapshot builds it', async () => {
    const src = at('a.db');
    runSqliteCli(
      src,
      "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a'),(2,'b'); CREATE TABLE u(id INTEGER PRIMARY KEY, v); INSERT INTO u VALUES(1,'u1'),(2,'u2');",
    );
    expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
    const one = at('one.jsonl');
    expect((await runCliAsync(['export', src, '--out', one])).status).toBe(0);
    const tgt = at('imp.db');
    expect((await runCliAsync(['import', tgt, one])).status).toBe(0);
    // u enabled, and a new export of both (its cursor is where t's in the target is), then both changed.
    expect((await runCliAsync(['enable', src, 'u'])).status).toBe(0);
    const e = await runCliAsync(['export', src, '--out', at('two.jsonl'), '--json']);
    expect(e.status, e.stderr).toBe(0);
    const twoCursor = (JSON.parse(e.stdout) as { cursor: string }).cursor;
    runSqliteCli(src, "INSERT INTO u VALUES(3,'u3'); INSERT INTO t VALUES(3,'c');");
    const three = at('three.jsonl');
    expect((await runCliAsync(['export', src, '--out', three, '--since', twoCursor])).status).toBe(0);
    expect(fs.readFileSync(three, 'utf8')).toContain('"table":"u"');
    const r = await runCliAsync(['import', tgt, three]);
    expect(r.status, r.stdout + r.stderr).toBe(3);
    expect(r.stdout).toContain('u: pending MIRROR_NOT_BUILT at seq 0');
    expect(r.stdout).toContain('has no mirror of it, and the file has no snapshot of it');
    expect(r.stdout).toContain('sluice export SOURCE --out NEW_FILE');
    expect(rows(tgt, 't')).toBe('1=a,2=b,3=c');
    const j = await runCliAsync(['import', tgt, three, '--json']);
    expect(j.status).toBe(3);
    expect(parseJson(j, S.importOutput).projections.find((p) => p.name === 'u')).toMatchObject({
      state: 'pending',
      reason: 'MIRROR_NOT_BUILT',
      action: expect.stringContaining('its events in the file were not applied') as unknown,
    });
    // verify, which reads the source, says the same.
    const v = await runCliAsync(['verify', src, tgt]);
    expect(v.status).toBe(3);
    expect(v.stdout + v.stderr).toContain('MIRROR_NOT_BUILT');
    // The repair: a file that starts with a snapshot.
    const fresh = at('fresh.jsonl');
    expect((await runCliAsync(['export', src, '--out', fresh])).status).toBe(0);
    const again = await runCliAsync(['import', tgt, fresh]);
    expect(again.status, again.stdout + again.stderr).toBe(0);
    expect(rows(tgt, 'u')).toBe('1=u1,2=u2,3=u3');
    expect((await runCliAsync(['verify', src, tgt])).status).toBe(0);
  });

  test('a target built from definitions keeps exactly them', async () => {
    const { one, two } = await twoFiles();
    const tgt = at('defs.db');
    const def = at('tmap.json');
    fs.writeFileSync(def, JSON.stringify({ name: 'tm', source: 't', kind: 'map', columns: { id: 'id', v: 'v' } }));
    expect((await runCliAsync(['import', tgt, one, '--projection', def])).status).toBe(0);
    const r = await runCliAsync(['import', tgt, two]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(scalar(tgt, "SELECT count(*) FROM sqlite_schema WHERE name = 'u'")).toBe(0n);
    expect(scalar(tgt, 'SELECT group_concat(name) FROM _sluice_projections')).toBe('tm');
  });
  test("--projection '*' beside a definition file builds the mirror of every table and the definition, and a later file's snapshot of a table enabled since is mirrored too", async () => {
    const { src, one, two } = await twoFiles();
    const tgt = at('star.db');
    const def = at('tmap.json');
    fs.writeFileSync(def, JSON.stringify({ name: 'tm', source: 't', kind: 'map', columns: { id: 'id', v: 'v' } }));
    const r = await runCliAsync(['import', tgt, one, '--projection', '*', '--projection', def]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(scalar(tgt, 'SELECT group_concat(name) FROM (SELECT name FROM _sluice_projections ORDER BY name)')).toBe('t,tm');
    expect(mirrorAllRow(tgt)).toBe('given');
    const again = await runCliAsync(['import', tgt, two]);
    expect(again.status, again.stdout + again.stderr).toBe(0);
    await expectMirrored(src, tgt);
    expect(rows(tgt, 'tm')).toBe('1=a,2=b');
  });
});
