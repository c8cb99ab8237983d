// import classifies a changed definition as sync does: without a snapshot in the file a change that needs a rebuild is refused, never applied over the old rows
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { health } from '../../src/index.ts';
import { runCliAsync, makeDir, removeDir, scalar } from '../cli/support/cli.ts';

/*
 * A map m built by import with `filter: flag = 1`, then a file with no
 * snapshot (export --since) imported with m's definition changed to
 * `flag = 0`: the batch was applied by the new definition over the rows
 * the old one built (a target that matches neither), exit 0, m active, and
 * the stored definition stayed the old one (a later verify blamed the user:
 * TARGET_EDITED). A file with nothing new ignored the changed definition
 * without a word. Now import classifies the change as sync and explain do
 * (Compatible / Rebuildable / Rejected, from the facts the target holds):
 * a filter change needs a rebuild from a snapshot, which such a file does
 * not have, so it is refused (IMPORT_NO_SNAPSHOT) with nothing written,
 * naming the repair: a file with a snapshot (which rebuilds m by the new
 * definition), or this file with the definition m was built with. A
 * Compatible change (the same projection written differently) is stored and
 * m goes on from its cursor.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

const M1 = { name: 'm', source: 't', kind: 'map', columns: { k: 'id', val: 'v' }, filter: 'flag = 1' };
const M2 = { ...M1, filter: 'flag = 0' };

function definition(name: string, d: object): string {
  const f = at(name);
  fs.writeFileSync(f, JSON.stringify(d));
  return f;
}

const rowsOf = (tgt: string) => scalar(tgt, "SELECT group_concat(k || '=' || val, ',') FROM (SELECT * FROM m ORDER BY k)");
const stored = (tgt: string) =>
  scalar(tgt, "SELECT json_object('seq', seq, 'filter', json_extract(definition, '$.filter')) FROM _sluice_projections WHERE name = 'm'");

/** A source, a target with m (flag = 1) imported from its first export, two rows inserted since, and a file of them alone (export --since). */
async function setUp(): Promise<{ src: string; tgt: string; since: string; m1: string; m2: string; cursor: string }> {
  const src = at('a.db');
  runSqliteCli(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v, flag); INSERT INTO t VALUES(1,'a',1),(2,'b',0);");
  expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
  const e = await runCliAsync(['export', src, '--out', at('f.jsonl'), '--json']);
  expect(e.status, e.stderr).toBe(0);
  const cursor = (JSON.parse(e.stdout) as { cursor: string }).cursor;
  const m1 = definition('m1.json', M1);
  const m2 = definition('m2.json', M2);
  const tgt = at('imp.db');
  const first = await runCliAsync(['import', tgt, at('f.jsonl'), '--projection', m1]);
  expect(first.status, first.stderr).toBe(0);
  runSqliteCli(src, "INSERT INTO t VALUES(3,'c',0),(4,'d',1)");
  const since = at('g.jsonl');
  expect((await runCliAsync(['export', src, '--out', since, '--since', cursor])).status).toBe(0);
  return { src, tgt, since, m1, m2, cursor };
}

describe('import of a file without a snapshot, with a changed definition', () => {
  test('a filter change is refused (IMPORT_NO_SNAPSHOT), nothing written, and the repairs it names work', async () => {
    const { src, tgt, since, m1, m2, cursor } = await setUp();
    const before = stored(tgt);
    const r = await runCliAsync(['import', tgt, since, '--projection', m2]);
    expect(r.status, r.stdout + r.stderr).toBe(1);
    expect(r.stderr).toContain('IMPORT_NO_SNAPSHOT');
    expect(r.stderr).toContain(`${since}:`);
    expect(r.stderr).toContain('projection m: the definition given is not the one it was built with (ALTER_FILTER_CHANGED');
    expect(r.stderr).toContain('Rebuildable');
    expect(r.stderr).toContain('sluice export SOURCE --out NEW_FILE');
    // Nothing written: the rows, the cursor and the definition the old filter built.
    expect(rowsOf(tgt)).toBe('1=a');
    expect(stored(tgt)).toBe(before);
    // Refused, it is recorded for health (a cron job that ignores the exit code is told), with the repair.
    const refused = health(tgt);
    expect(refused.ok).toBe(false);
    expect(refused.projections[0]).toMatchObject({ name: 'm', failure: { code: 'IMPORT_NO_SNAPSHOT' } });

    // The file with the definition m was built with: applied by it.
    const old = await runCliAsync(['import', tgt, since, '--projection', m1]);
    expect(old.status, old.stderr).toBe(0);
    expect(rowsOf(tgt)).toBe('1=a,4=d');
    expect(health(tgt).ok).toBe(true);

    // The same file again (nothing new in it), and an empty one (nothing at all), with the changed definition: refused too.
    const again = await runCliAsync(['import', tgt, since, '--projection', m2]);
    expect(again.status, again.stderr).toBe(1);
    expect(again.stderr).toContain('IMPORT_NO_SNAPSHOT');
    const empty = at('empty.jsonl');
    const e = await runCliAsync([
      'export',
      src,
      '--out',
      empty,
      '--since',
      String(scalar(tgt, "SELECT cursor FROM _sluice_projections WHERE name = 'm'")),
    ]);
    expect(e.status, e.stderr).toBe(0);
    expect(fs.statSync(empty).size).toBe(0);
    const nothing = await runCliAsync(['import', tgt, empty, '--projection', m2]);
    expect(nothing.status, nothing.stderr).toBe(1);
    expect(nothing.stderr).toContain('IMPORT_NO_SNAPSHOT');
    expect(nothing.stderr).toContain('the file holds no snapshot (nor any batch)');
    expect(rowsOf(tgt)).toBe('1=a,4=d');
    expect(cursor).not.toBe('');

    // A file that starts with a snapshot rebuilds m by the new definition, which is stored; verify agrees.
    const fresh = at('fresh.jsonl');
    expect((await runCliAsync(['export', src, '--out', fresh])).status).toBe(0);
    const rebuilt = await runCliAsync(['import', tgt, fresh, '--projection', m2]);
    expect(rebuilt.status, rebuilt.stderr).toBe(0);
    expect(rowsOf(tgt)).toBe('2=b,3=c');
    expect(JSON.parse(String(stored(tgt)))).toMatchObject({ filter: 'flag = 0' });
    const v = await runCliAsync(['verify', src, tgt]);
    expect(v.status, v.stdout + v.stderr).toBe(0);
  });

  test('a Compatible change (the same projection, written differently) is stored and the batch applied', async () => {
    const { src, tgt, since } = await setUp();
    const restated = definition('m1-restated.json', { ...M1, target: 'm' });
    const r = await runCliAsync(['import', tgt, since, '--projection', restated]);
    expect(r.status, r.stderr).toBe(0);
    expect(rowsOf(tgt)).toBe('1=a,4=d');
    expect(scalar(tgt, "SELECT json_extract(definition, '$.target') FROM _sluice_projections WHERE name = 'm'")).toBe('m');
    // The stored definition is the one the rows are by: a sync with it goes on, and verify agrees.
    const v = await runCliAsync(['verify', src, tgt]);
    expect(v.status, v.stdout + v.stderr).toBe(0);
  });
});
