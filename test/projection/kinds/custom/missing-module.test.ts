// a custom projection whose module is missing names the definition file and the path
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, expectOneLineError } from '../../../cli/support/cli.ts';

/*
 * A custom projection's "module" is resolved relative to the folder of the
 * definition file that names it. When it is not there, the error says which
 * definition file, the path as written, what it resolved to (relative to
 * what), and the fix; it is not Node's ERR_MODULE_NOT_FOUND with a path
 * inside sluice's own dist/. Nothing is created. The same for a handler
 * module that is there but cannot be loaded, and for a stored handler
 * whose module has moved since the target was made.
 */

let dir: string;
let src: string;
const at = (...f: string[]) => path.join(dir, ...f);

const HANDLER = `export default { version: '1', apply() {} };\n`;

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues']);
  fs.mkdirSync(at('defs', 'handlers'), { recursive: true });
  const def = (module: string) => JSON.stringify({ name: 'counts', source: 'issues', kind: 'custom', module });
  fs.writeFileSync(at('defs', 'missing.json'), def('./handlers/counts.mjs'));
  fs.writeFileSync(at('defs', 'handlers', 'broken.mjs'), `import './not-here.mjs';\n${HANDLER}`);
  fs.writeFileSync(at('defs', 'broken.json'), def('./handlers/broken.mjs'));
  fs.writeFileSync(at('defs', 'handlers', 'moving.mjs'), HANDLER);
  fs.writeFileSync(at('defs', 'moving.json'), def('./handlers/moving.mjs'));
});
afterAll(() => removeDir(dir));

describe('a custom projection module that cannot be loaded', () => {
  test('a missing module exits 1 naming the definition file, the path as written and what it resolved to, and creates no target', async () => {
    // Run from another folder than the definition's: the path is relative to the definition file, not to the cwd.
    const r = await runCliAsync(['sync', src, 'cache.db', '--projection', path.join('defs', 'missing.json'), '--json'], { cwd: dir });
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'CUSTOM_MODULE_NOT_FOUND');
    expect(r.stderr).toContain(path.join('defs', 'missing.json'));
    expect(r.stderr).toContain('"./handlers/counts.mjs"');
    expect(r.stderr).toContain(at('defs', 'handlers', 'counts.mjs'));
    expect(r.stderr).toContain(`relative to the definition file's folder ${at('defs')}`);
    expect(r.stderr).not.toContain('dist');
    expect(r.stderr).not.toContain('ERR_MODULE_NOT_FOUND');
    expect(parseJson(r, S.errorOutput).error.code).toBe('CUSTOM_MODULE_NOT_FOUND');
    expect(fs.existsSync(at('cache.db'))).toBe(false);
  });

  test('a module that is there but fails to load names the module and why', async () => {
    const r = await runCliAsync(['sync', src, 'cache.db', '--projection', at('defs', 'broken.json')], { cwd: dir });
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'CUSTOM_MODULE_FAILED');
    expect(r.stderr).toContain(at('defs', 'handlers', 'broken.mjs'));
    expect(r.stderr).toContain('not-here.mjs');
    expect(r.stderr).toContain(at('defs', 'broken.json'));
    expect(fs.existsSync(at('cache.db'))).toBe(false);
  });

  test('a stored handler whose module has moved since names the projection, the module and the fix', async () => {
    const target = at('moved.db');
    const first = await runCliAsync(['sync', src, target, '--projection', at('defs', 'moving.json')]);
    expect(first.status, first.stderr).toBe(0);
    fs.renameSync(at('defs', 'handlers', 'moving.mjs'), at('defs', 'handlers', 'moved.mjs'));
    const r = await runCliAsync(['sync', src, target]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'CUSTOM_MODULE_NOT_FOUND');
    expect(r.stderr).toContain('counts');
    expect(r.stderr).toContain(at('defs', 'handlers', 'moving.mjs'));
    expect(r.stderr).toContain('--projection');
    expect(r.stderr).not.toContain('dist');
  });
});
