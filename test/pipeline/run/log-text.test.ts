// sluice run log text writes one line per event even when a message holds newlines
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { startCli, type Spawned } from '../../cli/support/cli.ts';
import { appSource, kill, put, py, waitFor } from '../support/run.ts';

/*
 * `sluice run --log text` (the default) writes each event as one readable
 * line (docs/cli.md): journald, or anything that reads stderr by line,
 * makes one entry per line. A message that holds a newline (a handler's
 * error, here "first line\nsecond line") stays on its event's line, with
 * the newline shown as \n; every line starts with its time and level.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run --log text', () => {
  test('writes one line per event even when a message holds a newline', async ({ tmp }) => {
    const src = path.join(tmp, 'app.db');
    appSource(src);
    put(
      path.join(tmp, 'thrower.mjs'),
      `export default { version: '1', async init() {}, async apply() { throw new Error('first line\\nsecond line'); } };\n`,
    );
    const config = path.join(tmp, 'sluice.yml');
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues]
    targets:
      - path: cache.db
        projections: [{name: thrown, source: issues, kind: custom, module: ./thrower.mjs}]
`,
    );
    running = startCli(['run', '--config', config]);
    const r = running;
    await waitFor('the first build', () => r.stderr().includes(' built: '));
    py(src, `con.execute("UPDATE issues SET title = 'x' WHERE id = 1")`);
    await waitFor('the handler failure logged', () => r.stderr().includes('APPLY_FAILED'), 20_000);
    r.child.kill('SIGTERM');
    expect((await r.exited).status).toBe(0);
    const lines = r
      .stderr()
      .split('\n')
      .filter((l) => l !== '');
    expect(lines.filter((l) => !/^\d{4}-\d\d-\d\dT[\d:.]+Z (info|warn|error) /.test(l))).toEqual([]);
    expect(lines.find((l) => l.includes('APPLY_FAILED'))).toContain('first line\\nsecond line');
  }, 60_000);
});
