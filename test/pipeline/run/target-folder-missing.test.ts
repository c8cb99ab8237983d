// a declared target in a folder that does not exist yet is built there, as plan says
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { convergeOnce, loadPipeline, planPipeline } from '../../../src/pipeline/index.ts';
import type { Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, put, startRun, waitHealth } from '../support/run.ts';

/*
 * "A declared target that is missing (deleted, or a new machine) is built
 * with every declared projection." On a new machine its folder may be
 * missing too: plan said `build`, while run retried opening it for ever
 * (DB_OPEN_FAILED) and a converging pass failed. The file declares it:
 * run and a pass make its folder and build it; plan still writes nothing.
 */
let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('a declared target whose folder is missing', () => {
  test('plan says build and makes nothing; a converging pass and sluice run make the folder and build the target', async ({ tmp }) => {
    appSource(path.join(tmp, 'app.db'));
    const config = path.join(tmp, 'sluice.yml');
    const port = await freePort();
    put(
      config,
      `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - {path: new/cache/a.db, projections: ["*"]}\nlisten: 127.0.0.1:${port}\n`,
    );
    const plan = await planPipeline(await loadPipeline(config));
    expect(plan.targets[0]).toMatchObject({ exists: false, refused: null, projections: [{ name: 'issues', does: 'build' }] });
    expect(fs.existsSync(path.join(tmp, 'new'))).toBe(false);

    const pass = await convergeOnce(await loadPipeline(config));
    expect(pass.targets.map((t) => [t.created, t.error])).toEqual([[true, null]]);
    fs.rmSync(path.join(tmp, 'new'), { recursive: true });

    running = startRun(config);
    const h = await waitHealth(port, 'the build in a new folder', (x) => x.code === 200, 30_000);
    expect(h.status.targets[0]?.projections.map((p) => [p.name, p.state])).toEqual([['issues', 'active']]);
    expect(fs.existsSync(path.join(tmp, 'new', 'cache', 'a.db'))).toBe(true);
  }, 60_000);
});
