// verify reports the projections synced from a source whose capture was enabled again as not ok (SOURCE_CHANGED)
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson, scalar } from '../../cli/support/cli.ts';
import { pythonWrite } from '../../cli/support/source-state.ts';

/*
 * Capture disabled and enabled again while the app writes: the source has a
 * new source id, and every projection synced from its file has a cursor of
 * the old capture (SOURCE_CHANGED), stale until the next sync rebuilds it.
 * verify kept only the projections whose stored source id was the source's:
 * before any sync it refused with NO_PROJECTIONS_OF_SOURCE ("holds no
 * projection of source"), though every projection came from that file; and
 * once a sync of one projection (`--projection m.json`) had rebuilt it, it
 * exited 0 listing only that one, the stale mirror left out. A projection
 * whose stored source path is the source's file is the source's: reported
 * not ok with its cursor's reason.
 */

async function reenabled(tmp: string) {
  const at = (f: string) => path.join(tmp, f);
  const src = at('src.db');
  const tgt = at('tgt.db');
  const map = at('m.json');
  pythonWrite(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INT); INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)");
  fs.writeFileSync(map, JSON.stringify({ name: 't_map', source: 't', kind: 'map', target: 'tm', columns: { id: 'id', v: 'v' } }));
  const run = async (args: string[]) => {
    const r = await runCliAsync(args);
    expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
  };
  await run(['enable', src, 't']);
  await run(['sync', src, tgt, '--projection', '*', '--projection', map]);
  await run(['disable', src]);
  pythonWrite(src, "UPDATE t SET v = 'CHANGED' WHERE id = 1; INSERT INTO t VALUES (3, 'new', 3)");
  await run(['enable', src, 't']);
  return { src, tgt, map, run };
}

async function verifyCli(src: string, tgt: string) {
  const r = await runCliAsync(['verify', src, tgt, '--json']);
  expect(r.stderr).not.toMatch(/NO_PROJECTIONS_OF_SOURCE/);
  return { status: r.status, byName: Object.fromEntries(parseJson(r, S.verifyOutput).projections.map((p) => [p.name, p])) };
}

const STALE = { ok: false, reason: 'SOURCE_CHANGED', diffs: [] };

describe('verify of a source whose capture was enabled again', () => {
  test('before any sync: every projection of the source file is not ok with SOURCE_CHANGED (exit 3), not NO_PROJECTIONS_OF_SOURCE', async ({
    tmp,
  }) => {
    const { src, tgt } = await reenabled(tmp);
    const v = await verifyCli(src, tgt);
    expect(v.status, JSON.stringify(v.byName)).toBe(3);
    expect(Object.keys(v.byName).sort()).toEqual(['t', 't_map']);
    for (const name of ['t', 't_map']) {
      expect(v.byName[name], name).toMatchObject(STALE);
      expect(v.byName[name]?.skipped).toMatch(/the next sluice sync rebuilds it by itself/);
    }
    // Nothing suspended: the next sync rebuilds them.
    expect(scalar(tgt, "SELECT group_concat(state, ',') FROM _sluice_projections")).toBe('active,active');
  });

  test('after a sync of one projection: the mirror left stale is listed, not ok with SOURCE_CHANGED (exit 3); a plain sync rebuilds it', async ({
    tmp,
  }) => {
    const { src, tgt, map, run } = await reenabled(tmp);
    await run(['sync', src, tgt, '--projection', map]);
    const v = await verifyCli(src, tgt);
    expect(v.status, JSON.stringify(v.byName)).toBe(3);
    expect(v.byName.t_map).toMatchObject({ ok: true });
    expect(v.byName.t, JSON.stringify(v.byName)).toMatchObject(STALE);

    await run(['sync', src, tgt]);
    const after = await verifyCli(src, tgt);
    expect(after.status, JSON.stringify(after.byName)).toBe(0);
    expect(scalar(tgt, 'SELECT v FROM t WHERE id = 1')).toBe('CHANGED');
  });
});
