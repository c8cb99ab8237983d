// an unknown projection name is one code for drop and reinit with the retired code as an alias
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, expectOneLineError, syncByLibrary } from './support/cli.ts';

/*
 * One mistake, one code: a projection name the target does not hold is
 * PROJECTION_NOT_FOUND whichever command is given it (drop, reinit, sync
 * --reinit). The code reinit used to give, UNKNOWN_PROJECTION, is retired:
 * for one release the --json error object names it in `aliases`, so that a
 * script that matched it can move over.
 */

let dir: string;
let src: string;
let tgt: string;

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(path.join(dir, 'app.db'), ['issues']);
  tgt = path.join(dir, 'cache.db');
  expect(await syncByLibrary(src, tgt)).toBe(0);
});
afterAll(() => removeDir(dir));

test('drop, reinit and sync --reinit of a name the target does not hold all fail with PROJECTION_NOT_FOUND, listing the names there are, and write nothing', async () => {
  const before = fs.readFileSync(tgt);
  const runs = {
    drop: await runCliAsync(['drop', tgt, 'nosuch', '--json']),
    reinit: await runCliAsync(['reinit', src, tgt, 'nosuch', '--json']),
    syncReinit: await runCliAsync(['sync', src, tgt, '--reinit', 'nosuch', '--json']),
  };
  for (const [what, r] of Object.entries(runs)) {
    expect(r.status, `${what}: ${r.stderr}`).toBe(1);
    expectOneLineError(r, 'PROJECTION_NOT_FOUND');
    expect(r.stderr, what).toMatch(/nosuch.*issues/);
    const out = S.errorOutput.parse(JSON.parse(r.stdout));
    expect(out.error, what).toMatchObject({ code: 'PROJECTION_NOT_FOUND', aliases: ['UNKNOWN_PROJECTION'] });
  }
  expect(fs.readFileSync(tgt).equals(before)).toBe(true);
});

test('reinit into a target path that does not exist (mistyped) fails with PROJECTION_NOT_FOUND and makes no file, where it built a new target', async () => {
  const typo = path.join(dir, 'cahce.db');
  const r = await runCliAsync(['reinit', src, typo, 'issues']);
  expect(r.status, r.stdout).toBe(1);
  expectOneLineError(r, 'PROJECTION_NOT_FOUND');
  expect(r.stderr).toContain(typo);
  expect(fs.existsSync(typo)).toBe(false);
});

test('an error whose code was never renamed carries no aliases', async () => {
  const r = await runCliAsync(['drop', path.join(dir, 'absent.db'), 'issues', '--json']);
  expect(r.status).toBe(1);
  const out = S.errorOutput.parse(JSON.parse(r.stdout));
  expect(out.error.code).toBe('DB_NOT_FOUND');
  expect(out.error).not.toHaveProperty('aliases');
});
