// sluice run removes a projection or an acknowledgement only when the file says prune
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { scalar, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, logLines, put, startRun, waitFor, waitForRun, waitHealth } from '../support/run.ts';

/*
 * Removal is explicit (issue 21, item 2): a projection or a target taken
 * out of the pipeline file is left as it is by `run` (health reports it
 * undeclared), until the file says `prune: true`: then the projection is
 * dropped as `sluice drop` would, and the source forgets the
 * acknowledgements of the target no longer declared, as `sluice forget`.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

const held = (tgt: string, name: string) => scalar(tgt, 'SELECT count(*) FROM _sluice_projections WHERE name = ?', name);
const acks = (src: string, tgt: string) =>
  scalar(src, 'SELECT count(*) FROM _sluice_consumers WHERE name LIKE ?', `%@${fs.realpathSync(tgt)}`);

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a projection and a target taken out of the file stay until the file says prune: true, which drops the one and forgets the acknowledgements of the other', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const cache = path.join(tmp, 'cache.db');
    const old = path.join(tmp, 'old.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    const port = await freePort();
    const file = (targets: string, prune = '') =>
      put(
        config,
        `sources:\n  - path: app.db\n    capture: [issues, comments]\n    targets:\n${targets}listen: 127.0.0.1:${port}\n${prune}`,
      );
    const MAP = `{name: open_issues, source: issues, kind: map, columns: {id: id, title: title}, filter: "state = 'open'"}`;
    file(`      - {path: cache.db, projections: ["*", ${MAP}]}\n      - {path: old.db, projections: ["*"]}\n`);
    running = startRun(config);
    const r = running;
    await waitHealth(port, 'the first build', (h) => h.code === 200);
    await waitForRun(r, 'old.db acknowledged on the source', () => Number(acks(src, old)) === 2);

    // Taken out of the file: nothing is removed.
    file(`      - {path: cache.db, projections: ["*"]}\n`);
    await waitFor(
      'the reload, and cache.db reopened',
      () => logLines(r).filter((l) => l.event === 'start' && l.part.endsWith('cache.db')).length >= 2,
    );
    const after = await waitHealth(port, 'old.db no longer declared', (h) => h.status.targets.length === 1);
    expect(after.status.targets[0]?.projections.find((p) => p.name === 'open_issues')?.declared).toBe(false);
    expect(held(cache, 'open_issues')).toBe(1n);
    expect(Number(acks(src, old))).toBe(2);

    // prune: true removes them.
    file(`      - {path: cache.db, projections: ["*"]}\n`, 'prune: true\n');
    await waitForRun(r, 'open_issues dropped', () => held(cache, 'open_issues') === 0n);
    await waitForRun(r, 'old.db forgotten', () => Number(acks(src, old)) === 0);
    expect(scalar(cache, "SELECT count(*) FROM sqlite_schema WHERE name = 'open_issues'")).toBe(0n);
    expect(held(cache, 'issues')).toBe(1n);
    expect(Number(acks(src, cache))).toBeGreaterThanOrEqual(2);
    // Each removal is logged; the line reaches stderr through the main thread, after the drop is visible in the file.
    await waitFor('the drop and the forget logged', () => {
      const said = logLines(r).map((l) => l.event);
      return said.includes('dropped') && said.includes('forgot');
    });
  });
});
