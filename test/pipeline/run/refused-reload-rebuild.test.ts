// after a refused reload a target built again follows the configuration run kept
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { scalar, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, logLines, put, startRun, waitForRun, waitHealth } from '../support/run.ts';

/*
 * An edit of the pipeline file (or of a definition file it names) that run
 * refuses (config-invalid) leaves the configuration loaded before running.
 * A target's worker that starts again afterwards (here: its target file was
 * deleted) used to read the file itself: it applied the refused edit (a
 * filter changed beside a capture of a table the source does not have), or,
 * when the file did not load at all, could not start, and the target was
 * never built again. The worker is given the configuration run accepted.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

/** The pipeline file: open_issues (a map of the issues matching `filter`) inline, and titles from titles.json. */
const pipelineFile = (port: number, filter: string, capture = 'issues') => `sources:
  - path: app.db
    capture: [${capture}]
    targets:
      - path: cache.db
        projections:
          - {name: open_issues, source: issues, kind: map, columns: {id: id, title: title}, filter: "${filter}"}
          - titles.json
listen: 127.0.0.1:${port}
`;

const TITLES = JSON.stringify({ name: 'titles', source: 'issues', kind: 'map', columns: { id: 'id', title: 'title' } });

/** The target as the first configuration builds it (appSource: 50 issues, the odd ids open). */
const builtAsAccepted = (tgt: string) => () => {
  try {
    return (
      scalar(tgt, 'SELECT count(*) FROM open_issues') === 25n &&
      scalar(tgt, 'SELECT count(*) FROM open_issues WHERE id % 2 = 0') === 0n &&
      scalar(tgt, 'SELECT count(*) FROM titles') === 50n
    );
  } catch {
    return false; // not built (yet)
  }
};

const EDITS: readonly { readonly what: string; readonly edit: (tmp: string, port: number) => void }[] = [
  {
    what: 'a capture of a table the source does not have, beside another filter',
    edit: (tmp, port) => put(path.join(tmp, 'sluice.yml'), pipelineFile(port, "state = 'closed'", 'issues, labels')),
  },
  {
    what: 'a pipeline file that does not parse',
    edit: (tmp, port) =>
      put(path.join(tmp, 'sluice.yml'), pipelineFile(port, "state = 'closed'").replace('projections:', 'projections: [')),
  },
  {
    what: 'a definition file that is not JSON',
    edit: (tmp) => put(path.join(tmp, 'titles.json'), TITLES.slice(0, -1)),
  },
];

describe.skipIf(process.platform === 'win32')('sluice run after a reload it refused', () => {
  for (const { what, edit } of EDITS)
    test(`builds a deleted target again with the configuration it kept (refused: ${what})`, async ({ tmp }) => {
      const src = path.join(tmp, 'app.db');
      const tgt = path.join(tmp, 'cache.db');
      const config = path.join(tmp, 'sluice.yml');
      appSource(src);
      const port = await freePort();
      put(path.join(tmp, 'titles.json'), TITLES);
      put(config, pipelineFile(port, "state = 'open'"));
      running = startRun(config);
      const r = running;
      await waitHealth(port, 'the first build', (h) => h.code === 200);
      expect(builtAsAccepted(tgt)()).toBe(true);

      edit(tmp, port);
      await waitForRun(r, 'the edit refused', () => logLines(r).some((l) => l.event === 'config-invalid'), 10_000);
      for (const f of [tgt, `${tgt}-wal`, `${tgt}-shm`]) fs.rmSync(f, { force: true });
      await waitForRun(r, 'the target built again as the configuration kept declares it', builtAsAccepted(tgt), 20_000);
      expect(logLines(r).filter((l) => l.event === 'reload')).toEqual([]);
    }, 60_000);
});
