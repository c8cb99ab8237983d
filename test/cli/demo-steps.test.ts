// the demo runs every step and reports them as json
import fs from 'node:fs';
import path from 'node:path';
import { afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, dumpTables } from './support/cli.ts';

let dir: string | undefined;
afterAll(() => removeDir(dir));

describe('demo', () => {
  test('--dir --json: every step checks out, exit 0, and the cache it leaves verifies', async () => {
    dir = makeDir();
    const work = path.join(dir, 'demo'); // --dir makes it
    const r = await runCliAsync(['demo', '--dir', work, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const d = parseJson(r, S.demoOutput);
    expect(d.ok).toBe(true);
    expect(d.dir).toBe(work);
    expect(d.steps.map((s) => s.step)).toEqual([
      'build fixture',
      'enable capture',
      'initial sync (snapshot)',
      'burst of writes from Python sqlite3',
      'incremental sync',
      'verify cache against source',
      'crash mid-sync (SIGKILL before commit)',
      'resume after the crash',
      'tampered cache row: suspend, then --reinit',
      'health and lag',
    ]);
    for (const s of d.steps) expect(s, s.step).toMatchObject({ ok: true });
    expect(d.steps.find((s) => s.step === 'incremental sync')?.detail).toContain('"zeppelin": 0 -> 50 hits');

    // What it left behind is real: a source and a cache that sluice itself finds in agreement.
    const source = path.join(work, 'tracker.db');
    const cache = path.join(work, 'cache.db');
    expect(fs.existsSync(source) && fs.existsSync(cache)).toBe(true);
    const [verify, health] = await Promise.all([
      runCliAsync(['verify', source, cache, '--json']),
      runCliAsync(['health', cache, '--json']),
    ]);
    expect(verify.status, verify.stderr).toBe(0);
    expect(parseJson(verify, S.verifyOutput).ok).toBe(true);
    expect(health.status, health.stderr).toBe(0);
    expect(parseJson(health, S.healthOutput).projections.every((p) => p.lagEvents === 0)).toBe(true);
    expect(dumpTables(cache, ['issues'])).toEqual(dumpTables(source, ['issues']));
  });
});
