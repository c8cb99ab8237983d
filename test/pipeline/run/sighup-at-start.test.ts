// sluice run survives a sighup while it starts
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import type { Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, put, startRun, waitFor, waitHealth } from '../support/run.ts';

/*
 * `systemctl reload sluice` sends SIGHUP (docs/deploy.md), and may do so
 * while run is still starting (here, held 1.5 s importing a handler module
 * that says when it starts). SIGHUP's default action ends a process: run
 * must not die of it, but reload once started, and stop with 0 on SIGTERM.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a SIGHUP while it starts does not end it: it starts, reloads, and exits 0 on SIGTERM', async ({ tmp }) => {
    appSource(path.join(tmp, 'app.db'));
    const marker = path.join(tmp, 'importing');
    put(
      path.join(tmp, 'slow.mjs'),
      `import fs from 'node:fs';
fs.writeFileSync(${JSON.stringify(marker)}, '');
await new Promise((resolve) => setTimeout(resolve, 1500));
export default { version: '1', async init() {}, async apply() {} };
`,
    );
    const config = path.join(tmp, 'sluice.yml');
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues]
    targets:
      - path: cache.db
        projections: ["*", {name: hooked, source: issues, kind: custom, module: ./slow.mjs}]
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config);
    const r = running;
    await waitFor('the start importing the handler', () => fs.existsSync(marker));
    r.child.kill('SIGHUP');
    await waitHealth(port, 'the pipeline built', (h) => h.code === 200);
    await waitFor('the SIGHUP reload', () => r.stderr().includes('"event":"reload"'));
    r.child.kill('SIGTERM');
    expect(await r.exited).toEqual({ status: 0, signal: null });
  }, 60_000);
});
