// verify lists every projection of the source's business: a lost one the source acknowledges; a "*" mirror of a file moved and enabled again stays that file's
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson, scalar } from '../../cli/support/cli.ts';
import { pythonWrite } from '../../cli/support/source-state.ts';

/*
 * verify must never exit 0 on a target that is wrong for its source. Two
 * ways it did:
 *
 * - A target deleted and made again by a plain sync lost the map given to it
 *   with --projection: sync and health said so (CONSUMER_NOT_BUILT, exit 3),
 *   verify printed "t: ok" and exited 0, nothing about the map. It now lists
 *   the lost projection as sync and health find it (the source's
 *   acknowledgements for this target), not ok, with their repair.
 * - A source file moved and its capture enabled again: the target's "*"
 *   mirror t (its cursor of the old capture, its recorded source the old
 *   path) matched neither the capture id nor the file, so verify left it out
 *   while "*" counted its name as held; after a sync of a map alone verify
 *   said "m: ok", exit 0, with t stale. t is of the old file and capture, as
 *   recorded, not the new path's (a file not there now may be back soon: it
 *   makes its projections no one else's, source-projections.ts): health says
 *   its source file is gone (exit 3), verify of the new path answers for m
 *   alone, and `sync --projection '*'` of the new path takes t over
 *   (SOURCE_CHANGED), from then on its. A mirror of another source file that
 *   still exists stays out.
 */

async function run(args: string[], status = 0) {
  const r = await runCliAsync(args);
  expect(r.status, `sluice ${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(status);
  return r;
}

async function verifyCli(src: string, tgt: string) {
  const r = await runCliAsync(['verify', src, tgt, '--json']);
  const text = await runCliAsync(['verify', src, tgt]);
  const out = parseJson(r, S.verifyOutput);
  return {
    status: r.status,
    textStatus: text.status,
    text: text.stdout,
    byName: Object.fromEntries(out.projections.map((p) => [p.name, p])),
  };
}

describe('verify of the projections a source answers for', () => {
  test('a projection the target lost (deleted and made again by a plain sync) is listed CONSUMER_NOT_BUILT with the repair health gives, exit 3', async ({
    tmp,
  }) => {
    const at = (f: string) => path.join(tmp, f);
    const src = at('src.db');
    const tgt = at('tgt.db');
    const map = at('m.json');
    pythonWrite(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a')");
    fs.writeFileSync(map, JSON.stringify({ name: 'm', source: 't', kind: 'map', columns: { id: 'id' } }));
    await run(['enable', src, 't']);
    await run(['sync', src, tgt]);
    await run(['sync', src, tgt, '--projection', map]);
    for (const f of [tgt, `${tgt}-wal`, `${tgt}-shm`]) fs.rmSync(f, { force: true });
    await run(['sync', src, tgt], 3);
    const h = parseJson(await run(['health', tgt, '--json'], 3), S.healthOutput);
    const lost = h.projections.find((p) => p.name === 'm');
    expect(lost, JSON.stringify(h)).toMatchObject({ state: 'lost', reason: 'CONSUMER_NOT_BUILT' });

    const v = await verifyCli(src, tgt);
    expect(v.status, JSON.stringify(v.byName)).toBe(3);
    expect(v.textStatus).toBe(3);
    expect(v.byName.t).toMatchObject({ ok: true });
    expect(v.byName.m, JSON.stringify(v.byName)).toMatchObject({ ok: false, reason: 'CONSUMER_NOT_BUILT', diffs: [] });
    const repair = v.byName.m?.repair ?? '';
    expect(repair).toContain(`--projection`);
    // The repair health prints for it, word for word.
    expect(
      lost?.problems.some((p) => p.includes(`CONSUMER_NOT_BUILT: ${repair}`)),
      JSON.stringify(lost?.problems),
    ).toBe(true);
    expect(v.text).toMatch(/^m: NOT VERIFIED CONSUMER_NOT_BUILT: /m);
    // verify only reads: the acknowledgement is still there.
    expect(scalar(src, "SELECT count(*) FROM _sluice_consumers WHERE name LIKE 'm@%'")).toBe(1n);

    // Built again: verify is green.
    await run(['sync', src, tgt, '--projection', map]);
    const fixed = await verifyCli(src, tgt);
    expect(fixed.status, JSON.stringify(fixed.byName)).toBe(0);
    expect(Object.keys(fixed.byName).sort()).toEqual(['m', 't']);
  });

  test("a \"*\" mirror of a file moved and its capture enabled again stays the old file's: health says its source is gone (exit 3), verify of the new path answers for its map alone; sync --projection '*' of the new path takes it over", async ({
    tmp,
  }) => {
    const at = (f: string) => path.join(tmp, f);
    const a = at('A.db');
    const a2 = at('A2.db');
    const tgt = at('tgt.db');
    const map = at('m.json');
    pythonWrite(a, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b')");
    fs.writeFileSync(map, JSON.stringify({ name: 'm', source: 't', kind: 'map', columns: { id: 'id' } }));
    await run(['enable', a, 't']);
    await run(['sync', a, tgt]);
    fs.renameSync(a, a2);
    for (const f of [`${a}-wal`, `${a}-shm`]) fs.rmSync(f, { force: true });
    await run(['disable', a2]);
    await run(['enable', a2, 't']);
    pythonWrite(a2, "UPDATE t SET v = 'CHANGED' WHERE id = 1");
    await run(['sync', a2, tgt, '--projection', map]);

    const h = parseJson(await run(['health', tgt, '--json'], 3), S.healthOutput);
    const stale = h.projections.find((p) => p.name === 't');
    expect(stale, JSON.stringify(h)).toMatchObject({ sourcePath: a, needsAction: true });
    expect(stale?.problems.join(' ')).toContain(`source ${a} does not exist`);
    const v = await verifyCli(a2, tgt);
    expect(v.status, JSON.stringify(v.byName)).toBe(0);
    expect(Object.keys(v.byName)).toEqual(['m']);
    // A plain sync of the new path leaves t as it is.
    await run(['sync', a2, tgt]);
    expect(scalar(tgt, 'SELECT v FROM t WHERE id = 1')).toBe('a');

    const taken = parseJson(await run(['sync', a2, tgt, '--projection', '*', '--json']), S.syncOutput);
    expect(taken.projections.map((p) => [p.name, p.rebuilt])).toEqual([['t', 'SOURCE_CHANGED']]);
    expect(scalar(tgt, 'SELECT v FROM t WHERE id = 1')).toBe('CHANGED');
    const after = await verifyCli(a2, tgt);
    expect(after.status, JSON.stringify(after.byName)).toBe(0);
    expect(Object.keys(after.byName).sort()).toEqual(['m', 't']);
    await run(['health', tgt]);
  });

  test('a mirror of another source file that still exists stays out of this source verify', async ({ tmp }) => {
    const at = (f: string) => path.join(tmp, f);
    const a = at('A.db');
    const b = at('B.db');
    const tgt = at('tgt.db');
    const map = at('mb.json');
    pythonWrite(a, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a')");
    pythonWrite(b, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'other'), (2, 'b')");
    fs.writeFileSync(map, JSON.stringify({ name: 'mb', source: 't', kind: 'map', target: 'mb', columns: { id: 'id', v: 'v' } }));
    await run(['enable', a, 't']);
    await run(['enable', b, 't']);
    await run(['sync', a, tgt]);
    await run(['sync', b, tgt, '--projection', map]);

    const vb = await verifyCli(b, tgt);
    expect(vb.status, JSON.stringify(vb.byName)).toBe(0);
    expect(Object.keys(vb.byName)).toEqual(['mb']);
    const va = await verifyCli(a, tgt);
    expect(va.status, JSON.stringify(va.byName)).toBe(0);
    expect(Object.keys(va.byName)).toEqual(['t']);
  });
});
