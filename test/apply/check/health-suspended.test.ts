// health exits 3 for a suspended projection and 0 with its lag when all is well
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, write, expectOneLineError, scalar } from '../../cli/support/cli.ts';

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'comments']);
  tgt = at('cache.db');
  await sync(src, tgt);
});
afterAll(() => removeDir(dir));

describe('health', () => {
  test('all well: exit 0, and lagEvents counts what the source has not handed over yet', async () => {
    write(src, "UPDATE issues SET title = 'lag ' || number WHERE repo_id = 1 AND number <= 4; DELETE FROM comments WHERE id = 3");
    const r = await runCliAsync(['health', tgt, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const h = parseJson(r, S.healthOutput);
    expect(h.ok).toBe(true);
    const byName = Object.fromEntries(h.projections.map((p) => [p.name, p]));
    expect(byName.issues).toMatchObject({
      state: 'active',
      lagEvents: 4,
      sourceSeq: 5,
      seq: 0,
      needsAction: false,
      lastError: null,
      sourcePath: src,
    });
    expect(byName.comments).toMatchObject({ state: 'active', lagEvents: 1, needsAction: false });
    expect(byName.issues?.lagMs).toBeGreaterThanOrEqual(0);
    expect(byName.issues?.action).toBeUndefined();
  });

  test('a projection suspended by a tampered row: sync exits 3, then health exits 3 and says what to do', async () => {
    write(tgt, "UPDATE issues SET body = 'tampered' WHERE repo_id = 1 AND number = 2");
    const s = await runCliAsync(['sync', src, tgt, '--json']);
    expect(s.status, s.stderr).toBe(3);
    const rep = parseJson(s, S.syncOutput);
    expect(rep.projections.find((p) => p.name === 'issues')).toMatchObject({ state: 'suspended', reason: 'TARGET_DIVERGED' });
    expect(rep.projections.find((p) => p.name === 'comments')).toMatchObject({ state: 'active', applied: 1 });

    const r = await runCliAsync(['health', tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const h = parseJson(r, S.healthOutput);
    expect(h.ok).toBe(false);
    const byName = Object.fromEntries(h.projections.map((p) => [p.name, p]));
    expect(byName.issues).toMatchObject({ state: 'suspended', reason: 'TARGET_DIVERGED', needsAction: true, lagEvents: 4 });
    expect(byName.issues?.action).toMatch(/TARGET_DIVERGED/);
    expect(byName.comments).toMatchObject({ state: 'active', lagEvents: 0, needsAction: false });

    const human = await runCliAsync(['health', tgt]);
    expect(human.status, human.stderr).toBe(3);
    expect(human.stdout).toMatch(/!! issues \[mirror\] suspended TARGET_DIVERGED/);
  });

  test('the command health gives for it repairs it: sluice reinit rebuilds that projection alone from a snapshot; an unknown name is refused and writes nothing', async () => {
    const bytes = () => fs.readFileSync(tgt);
    const before = bytes();
    const unknown = await runCliAsync(['sync', src, tgt, '--reinit', 'isues', '--json']);
    expect(unknown.status).toBe(1);
    expectOneLineError(unknown, 'PROJECTION_NOT_FOUND');
    expect(unknown.stderr).toMatch(/isues.*have: comments, issues/);
    expect(bytes().equals(before)).toBe(true);
    // Nor is a new target made for it.
    const fresh = await runCliAsync(['sync', src, at('fresh.db'), '--reinit', 'isues']);
    expect(fresh.status).toBe(1);
    expectOneLineError(fresh, 'PROJECTION_NOT_FOUND');
    expect(fs.existsSync(at('fresh.db'))).toBe(false);

    const h = parseJson(await runCliAsync(['health', tgt, '--json']), S.healthOutput);
    const action = h.projections.find((p) => p.name === 'issues')?.action ?? '';
    const command = /sluice (reinit \S+ \S+ issues)$/.exec(action);
    expect(command, action).not.toBeNull();
    expect(command?.[1]).toBe(`reinit ${src} ${tgt} issues`);
    const r = await runCliAsync([...(command?.[1] ?? '').split(' '), '--json']);
    expect(r.status, r.stderr).toBe(0);
    const rep = parseJson(r, S.syncOutput);
    const issues = Number(scalar(src, 'SELECT count(*) FROM issues'));
    expect(rep.projections.find((p) => p.name === 'issues')).toMatchObject({
      state: 'active',
      rebuilt: 'REINIT',
      snapshotRows: issues,
      seq: rep.sourceSeq,
    });
    expect(rep.projections.find((p) => p.name === 'comments')).toMatchObject({ state: 'active', applied: 0 });
    expect(rep.projections.find((p) => p.name === 'comments')?.rebuilt).toBeUndefined();
    expect(scalar(tgt, "SELECT count(*) FROM issues WHERE body = 'tampered'")).toBe(0n);

    const after = await runCliAsync(['health', tgt, '--json']);
    expect(after.status, after.stderr).toBe(0);
    const v = await runCliAsync(['verify', src, tgt, '--json']);
    expect(v.status, v.stderr).toBe(0);
    expect(parseJson(v, S.verifyOutput).ok).toBe(true);
  });

  test('a file that is no target (its source) is an error, not an empty ok, and so is a missing one', async () => {
    const [notTarget, missing] = await Promise.all([runCliAsync(['health', src, '--json']), runCliAsync(['health', at('nope.db')])]);
    expect(notTarget.status, notTarget.stdout).toBe(1);
    expectOneLineError(notTarget, 'NOT_A_TARGET');
    expect(missing.status, missing.stderr).toBe(1);
    expectOneLineError(missing, 'DB_NOT_FOUND');
  });
});
