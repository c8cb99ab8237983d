// a definition file the pipeline file names before it exists (or while it is broken) is watched: writing it reloads
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { scalar, type Spawned } from '../../cli/support/cli.ts';
import { kill, logLines, put, runAppPipeline, waitForRun, waitHealth } from '../support/run.ts';

/*
 * The user names a new definition file in sluice.yml and saves it before
 * writing the definition file (or writes a broken one first): run refuses
 * that reload (config-invalid, /healthz 503). It used to go on watching the
 * files of the configuration it kept, not the one the new file names, so
 * writing (or fixing) the definition file never reloaded: 503 with a stale
 * configError until a SIGHUP. The files the refused file names are watched too.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

const OPEN = JSON.stringify({ name: 'open_items', source: 'issues', kind: 'map', columns: { id: 'id' }, filter: "state = 'open'" });

describe.skipIf(process.platform === 'win32')('sluice run, a definition file named before it is written', () => {
  for (const first of ['missing', 'not JSON'] as const)
    test(`reloads once the named file is written (it was ${first})`, async ({ tmp }) => {
      const { config, tgt, port, run } = await runAppPipeline(tmp, '"*"');
      running = run;
      const def = path.join(tmp, 'defs', 'open.json');
      if (first === 'not JSON') put(def, OPEN.slice(0, -1));
      put(config, fs.readFileSync(config, 'utf8').replace('["*"]', '["*", defs/open.json]'));
      await waitForRun(run, 'the edit refused', () => logLines(run).some((l) => l.event === 'config-invalid'), 15_000);
      put(def, OPEN);
      const h = await waitHealth(port, 'the definition written, loaded and built', (x) => x.code === 200, 15_000);
      expect(h.status.run.configError).toBeNull();
      expect(scalar(tgt, 'SELECT count(*) FROM open_items')).toBe(25n);
      expect(logLines(run).some((l) => l.event === 'reload')).toBe(true);
    }, 60_000);
});
