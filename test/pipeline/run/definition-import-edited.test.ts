// a .ts definition file's imports are read again on reload, and an edit of one reloads
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { scalar, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, logLines, put, startRun, waitForRun, waitHealth } from '../support/run.ts';

/*
 * defs/open.ts takes its filter from ./common.ts. Run imported only the top
 * file again on a reload (under a URL of its content), so the files it
 * imports stayed as Node first loaded them: after an edit of common.ts and
 * a SIGHUP, run logged a reload and kept the old filter (/healthz 200),
 * while plan --config said rebuild. A reload now reads the files a
 * definition imports again when one changed, and an edit of one is watched
 * as an edit of the definition file.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

const ids = (tgt: string) => {
  try {
    return scalar(tgt, 'SELECT group_concat(id) FROM (SELECT id FROM open_items ORDER BY id)');
  } catch {
    return undefined;
  }
};

describe.skipIf(process.platform === 'win32')('sluice run, a TypeScript definition that imports a file', () => {
  for (const how of ['SIGHUP', 'the watch'] as const)
    test(`reloads what the imported file says (${how})`, async ({ tmp }) => {
      const src = path.join(tmp, 'app.db');
      const tgt = path.join(tmp, 'cache.db');
      const config = path.join(tmp, 'sluice.yml');
      appSource(src, 4);
      const port = await freePort();
      put(path.join(tmp, 'defs', 'common.ts'), `export const FILTER = "state = 'open'";\n`);
      put(
        path.join(tmp, 'defs', 'open.ts'),
        `import { FILTER } from './common.ts';\nexport default { name: 'open_items', source: 'issues', kind: 'map', columns: { id: 'id' }, filter: FILTER };\n`,
      );
      put(
        config,
        `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - path: cache.db\n        projections: [defs/open.ts]\nlisten: 127.0.0.1:${port}\n`,
      );
      running = startRun(config);
      const r = running;
      await waitHealth(port, 'the first build', (h) => h.code === 200);
      expect(ids(tgt)).toBe('1,3');

      put(path.join(tmp, 'defs', 'common.ts'), `export const FILTER = "state = 'closed'";\n`);
      if (how === 'SIGHUP') r.child.kill('SIGHUP');
      await waitForRun(r, 'the reload', () => logLines(r).some((l) => l.event === 'reload'), 15_000);
      await waitForRun(r, 'open_items rebuilt with the filter common.ts now says', () => ids(tgt) === '2,4', 15_000);
      await waitHealth(port, 'the rebuilt target', (h) => h.code === 200);
    }, 60_000);
});
