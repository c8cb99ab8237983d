// a first sync that fails leaves a target whose health exits 3 with the failure
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, write, dumpTables } from '../../cli/support/cli.ts';

/*
 * A first sync that fails (a custom handler whose init throws, a target that
 * cannot grow) has built nothing, but the target it leaves must not read as
 * healthy: health exits 3 with the failure (its code and message) and what
 * to do, instead of "no projections in this target", exit 0. The next sync
 * that succeeds clears it.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeEach(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues']);
  tgt = at('cache.db');
});
afterEach(() => removeDir(dir));

async function expectFailing(name: string, code: string): Promise<void> {
  const health = await runCliAsync(['health', tgt, '--json']);
  expect(health.status, health.stdout + health.stderr).toBe(3);
  const p = parseJson(health, S.healthOutput).projections.find((x) => x.name === name);
  expect(p).toMatchObject({ needsAction: true, failure: { code, consecutive: 1 } });
  expect(p?.problems.join('\n')).toMatch(/sluice sync/);
}

describe('a first sync that fails', () => {
  test('a custom handler whose init throws: sync exits 1 and health exits 3 with the failure until a sync succeeds', async () => {
    fs.writeFileSync(
      at('counts.mjs'),
      `import fs from 'node:fs';
export default { version: '1', async init() { if (!fs.existsSync(${JSON.stringify(at('ok'))})) throw new Error('init refused: no ok file'); }, async apply() {} };\n`,
    );
    fs.writeFileSync(at('counts.json'), JSON.stringify({ name: 'counts', source: 'issues', kind: 'custom', module: './counts.mjs' }));
    const r = await runCliAsync(['sync', src, tgt, '--projection', at('counts.json')]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain('init refused');
    await expectFailing('counts', 'APPLY_FAILED');
    const h = parseJson(await runCliAsync(['health', tgt, '--json']), S.healthOutput);
    expect(h.projections[0]?.failure?.message).toContain('init refused: no ok file');

    fs.writeFileSync(at('ok'), '');
    const again = await runCliAsync(['sync', src, tgt, '--projection', at('counts.json')]);
    expect(again.status, again.stderr).toBe(0);
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
  });

  test('a full target (--max-target-mb): sync exits 1 with TARGET_FULL and health exits 3 with it; with room, the next sync builds it', async () => {
    write(src, "UPDATE issues SET body = body || printf('%.20000c', 'x')");
    const r = await runCliAsync(['sync', src, tgt, '--max-target-mb', '1']);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain('TARGET_FULL');
    await expectFailing('issues', 'TARGET_FULL');
    const again = await runCliAsync(['sync', src, tgt]);
    expect(again.status, again.stderr).toBe(0);
    expect(dumpTables(tgt, ['issues'])).toEqual(dumpTables(src, ['issues']));
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
  });
});
