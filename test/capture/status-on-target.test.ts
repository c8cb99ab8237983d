// status on a sync target says it is a target and names the status of its source, not an enable that enable refuses
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, expectOneLineError } from '../cli/support/cli.ts';

/*
 * `sluice status cache.db` (the target passed for its source) read "capture
 * is not enabled (CAPTURE_ABSENT); run: sluice enable cache.db issues ...",
 * and that enable refuses the file (TARGET_NOT_SOURCE). status now says
 * what the file is, as enable does (TARGET_NOT_SOURCE, exit 1), and names
 * the status of the source it is synced from, and health for the target.
 */

let dir: string;
let src: string;
let target: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues']);
  target = at('cache.db');
  await sync(src, target);
});
afterAll(() => removeDir(dir));

describe('status on a sync target', () => {
  test('exits 1 with TARGET_NOT_SOURCE naming the status of its source, and no enable', async () => {
    const r = await runCliAsync(['status', target]);
    expect(r.status, r.stdout).toBe(1);
    expectOneLineError(r, 'TARGET_NOT_SOURCE');
    expect(r.stderr).toContain(`${target} is a sluice target`);
    expect(r.stderr).toContain(`sluice status ${src}`);
    expect(r.stderr).toContain(`sluice health ${target} reads this target`);
    expect(r.stderr + r.stdout).not.toContain('sluice enable');
    const j = await runCliAsync(['status', target, '--json']);
    expect(j.status).toBe(1);
    expect(parseJson(j, S.errorOutput).error.code).toBe('TARGET_NOT_SOURCE');
    // What it names works.
    expect((await runCliAsync(['status', src])).status).toBe(0);
  });
});
