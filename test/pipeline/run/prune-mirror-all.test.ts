// a target whose file stops declaring "*": prune removes "*" from its set, and health's repair without prune works
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { scalar, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, logLines, put, startRun, waitForRun, waitHealth } from '../support/run.ts';

/*
 * The file stops declaring "*" for a target (its mirrors replaced by a map
 * of a table captured since). prune: true dropped the mirrors but left "*"
 * in the target's stored set (_sluice_projection_set), so the table
 * captured since read as a mirror "*" had not built and the file did not
 * declare: /healthz 503 for good, with a repair (sluice drop TGT comments)
 * that fails with PROJECTION_NOT_FOUND, as no such projection is held.
 * prune now removes "*" from the set; without prune, health says the set
 * holds "*" the file does not declare, with a repair that works.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run, a target whose file stops declaring "*"', () => {
  for (const prune of [true, false])
    test(`${prune ? 'prune: true removes "*"' : 'without prune, health names "*" and a repair that works'}`, async ({ tmp }) => {
      const src = path.join(tmp, 'app.db');
      const tgt = path.join(tmp, 'cache.db');
      const config = path.join(tmp, 'sluice.yml');
      appSource(src);
      const port = await freePort();
      const file = (capture: string, projections: string, pruning: boolean) =>
        put(
          config,
          `sources:\n  - path: app.db\n    capture: [${capture}]\n    targets:\n      - path: cache.db\n        projections: [${projections}]\nlisten: 127.0.0.1:${port}\n${pruning ? 'prune: true\n' : ''}`,
        );
      file('issues', '"*"', prune);
      running = startRun(config);
      const r = running;
      await waitHealth(port, 'the first build', (h) => h.code === 200);

      file('issues, comments', '{name: bodies, source: comments, kind: map, columns: {id: id, body: body}}', prune);
      await waitForRun(r, 'the reload', () => logLines(r).some((l) => l.event === 'reload'), 15_000);
      if (!prune) {
        const h = await waitHealth(
          port,
          'bodies built',
          (x) => x.status.targets[0]?.projections.some((p) => p.name === 'bodies' && p.state === 'active') === true,
        );
        expect(h.code).toBe(503);
        const problems = h.status.problems.join('\n');
        expect(problems).toContain('stores "*"');
        expect(problems).not.toContain(`sluice drop ${tgt} comments`);
        expect(h.status.targets[0]?.projections.map((p) => p.name).sort()).toEqual(['bodies', 'issues']);
        file('issues, comments', '{name: bodies, source: comments, kind: map, columns: {id: id, body: body}}', true);
      }
      await waitHealth(port, 'the target holding just what the file declares', (h) => h.code === 200, 20_000);
      expect(scalar(tgt, 'SELECT group_concat(name) FROM _sluice_projections')).toBe('bodies');
      expect(scalar(tgt, "SELECT count(*) FROM _sluice_projection_set WHERE member = '*'")).toBe(0n);
    }, 90_000);
});
