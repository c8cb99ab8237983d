// plan lists a table under "*" whose mirror cannot be made as refused with its reason and the file's fixes, as health --config does
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, runCli, test } from '../support/fixtures.ts';
import { convergeOnce, loadPipeline } from '../../src/pipeline/index.ts';
import { pipelineHealthOutput, planOutput } from '../../src/cli/index.ts';

/*
 * A target of "*" mirrors every captured table; one whose mirror cannot be
 * made as the table is (its key compares a column with another collation
 * than the column's: KEY_COLLATION_MISMATCH) is left out by sync at every
 * run, and health --config exits 3 with MIRROR_REFUSED. plan said "nothing
 * to do" (converged) for that file, and left the table out of a first pass
 * without a word. It lists the table's mirror as refused (MIRROR_REFUSED)
 * with the refusal and the fixes in the file's terms (change the table,
 * declare the other mirrors instead of "*", or stop capturing it: out of
 * "capture", then sluice disable, since run never disables capture), and
 * health --config says those fixes too.
 */

const SCHEMA = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO items VALUES (1, 'apple pie');
CREATE TABLE t (code TEXT COLLATE NOCASE, v TEXT, PRIMARY KEY (code COLLATE BINARY));
INSERT INTO t VALUES ('a', 'x');
`;

const YML = `sources:
  - path: app.db
    capture: [items, t]
    targets:
      - path: cache.db
        projections: ["*"]
`;

/** The fix said for t, in the file's terms. */
function expectFileFix(fix: string | undefined): void {
  expect(fix).toMatch(/its mirror cannot be made .*KEY_COLLATION_MISMATCH: /);
  expect(fix).toContain('instead of "*"');
  expect(fix).toContain('{name: items, source: items, kind: mirror}');
  expect(fix).toMatch(/remove it from "capture" .*sluice disable .*app\.db t\b/);
  expect(fix).toContain('sluice.yml:5');
}

describe('plan of "*" with a captured table whose mirror cannot be made', () => {
  test('once the pass has run: not "nothing to do", the mirror refused (MIRROR_REFUSED) with the file\'s fixes, exit 0; health --config says the same fixes and exits 3, the target there or deleted', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, YML);
    const pass = await convergeOnce(await loadPipeline(file));
    expect(pass.targets[0]?.error).toBeNull();
    expect(pass.targets[0]?.sync?.unmirrored?.map((u) => u.table)).toEqual(['t']);

    const human = runCli(['plan', '--config', file]);
    expect(human.status, human.stderr).toBe(0);
    expect(human.stdout).not.toContain('nothing to do');
    expect(human.stdout).toMatch(/^ {2}refuse t \[mirror\] \(MIRROR_REFUSED\): table t is captured but its mirror cannot be made/m);
    expect(human.stdout).toMatch(/^ {2}continue items \[mirror\]$/m);

    const json = runCli(['plan', '--config', file, '--json']);
    expect(json.status, json.stderr).toBe(0);
    const plan = planOutput.parse(JSON.parse(json.stdout));
    expect(plan.converged).toBe(false);
    expect(plan.targets[0]?.refused).toBeNull();
    const t = plan.targets[0]?.projections.find((p) => p.name === 't');
    expect(t).toMatchObject({ kind: 'mirror', does: 'refuse', reason: 'MIRROR_REFUSED' });
    expectFileFix(t?.fix);

    const h = runCli(['health', '--config', file, '--json']);
    expect(h.status, h.stderr).toBe(3);
    const ht = pipelineHealthOutput.parse(JSON.parse(h.stdout)).targets[0]?.projections.find((p) => p.name === 't');
    expect(ht?.reason).toBe('MIRROR_REFUSED');
    expectFileFix(ht?.action ?? undefined);
    expect(ht?.action).not.toMatch(/run sluice sync/);

    // The target deleted: health --config does not say that sluice run builds t, but its refusal, with the same fixes.
    for (const f of fs.readdirSync(tmp)) if (f.startsWith('cache.db')) fs.rmSync(path.join(tmp, f));
    const gone = runCli(['health', '--config', file, '--json']);
    expect(gone.status, gone.stderr).toBe(3);
    const gt = pipelineHealthOutput.parse(JSON.parse(gone.stdout)).targets[0]?.projections.find((p) => p.name === 't');
    expect(gt?.reason).toBe('MIRROR_REFUSED');
    expectFileFix(gt?.action ?? undefined);
    expect(runCli(['plan', '--config', file]).stdout).toMatch(/^ {2}refuse t \[mirror\] \(MIRROR_REFUSED\)/m);
  });

  test('before the first pass (no capture yet): both tables enabled, items built, t refused with the same fixes', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, YML);
    const r = runCli(['plan', '--config', file, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const plan = planOutput.parse(JSON.parse(r.stdout));
    expect(plan.sources[0]?.enable.map((e) => e.table)).toEqual(['items', 't']);
    expect(plan.targets[0]?.refused).toBeNull();
    expect(plan.targets[0]?.projections.map((p) => [p.name, p.does, p.reason])).toEqual([
      ['items', 'build', null],
      ['t', 'refuse', 'MIRROR_REFUSED'],
    ]);
    expectFileFix(plan.targets[0]?.projections[1]?.fix);
  });
});
