// sluice run takes up a handler module fixed after it failed to load
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import type { Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, put, startRun, waitHealth } from '../support/run.ts';

/*
 * A file that no longer loads keeps the running pipeline and turns
 * /healthz 503 "until fixed" (issue 21). A projection added with a handler
 * module that throws at import is such a file; once the module is fixed
 * (and the file saved, or SIGHUP), the pipeline loads and the projection
 * is built, without a restart: a module that failed to import is imported
 * afresh, not answered from the import that failed.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('takes up a handler module fixed after it failed to import on a reload, without a restart', async ({ tmp }) => {
    appSource(path.join(tmp, 'app.db'));
    const config = path.join(tmp, 'sluice.yml');
    const port = await freePort();
    const file = (extra: string) =>
      put(
        config,
        `sources:
  - path: app.db
    capture: [issues]
    targets:
      - path: cache.db
        projections: ["*"${extra}]
listen: 127.0.0.1:${port}
`,
      );
    file('');
    running = startRun(config);
    await waitHealth(port, 'the first build', (h) => h.code === 200);

    const handler = path.join(tmp, 'hooked.mjs');
    put(handler, `throw new Error('not written yet');\n`);
    file(', {name: hooked, source: issues, kind: custom, module: ./hooked.mjs}');
    const broken = await waitHealth(port, 'the module failure noticed', (h) => h.status.run.configError !== null);
    expect(broken.code).toBe(503);
    expect(broken.status.run.configError?.code).toBe('CUSTOM_MODULE_FAILED');

    put(handler, `export default { version: '1', async init() {}, async apply() {} };\n`);
    running.child.kill('SIGHUP');
    const fixed = await waitHealth(
      port,
      'the fixed module taken up',
      (h) => h.code === 200 && h.status.targets[0]?.projections.some((p) => p.name === 'hooked') === true,
      20_000,
    );
    expect(fixed.status.run.configError).toBeNull();
  }, 60_000);
});
