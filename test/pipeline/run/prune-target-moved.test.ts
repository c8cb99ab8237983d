// sluice run under prune: true forgets the acknowledgements of a target moved to another source of its file
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { scalar, type Spawned } from '../../cli/support/cli.ts';
import { loadPipeline, planPipeline } from '../../../src/pipeline/index.ts';
import { appSource, freePort, kill, py, put, startRun, waitFor, waitHealth } from '../support/run.ts';

/*
 * A target the file declares under another source (moved there: its old
 * source keeps the acknowledgements it made) is followed by this file's
 * own run, which holds its follower lock. That is no other process's
 * target: with prune: true, run forgets its acknowledgements on the old
 * source, as a converging pass does and plan says (kept, they would hold
 * the old source's journal for ever).
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

const acks = (src: string, tgt: string) =>
  Number(scalar(src, 'SELECT count(*) FROM _sluice_consumers WHERE name LIKE ?', `%@${fs.realpathSync(tgt)}`));

describe.skipIf(process.platform === 'win32')('sluice run, prune: true', () => {
  test('forgets the acknowledgements of a target the file now declares under another source', async ({ tmp }) => {
    const app = path.join(tmp, 'app.db');
    const other = path.join(tmp, 'other.db');
    const cache = path.join(tmp, 'cache.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(app);
    py(other, `con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")\ncon.execute("INSERT INTO notes VALUES (1, 'a')")`);
    const port = await freePort();
    const file = (appTargets: string, otherTargets: string) =>
      put(
        config,
        `sources:\n  - path: app.db\n    capture: [issues]\n    targets: [${appTargets}]\n  - path: other.db\n    capture: [notes]\n    targets: [${otherTargets}]\nlisten: 127.0.0.1:${port}\nprune: true\n`,
      );
    file('{path: cache.db, projections: ["*"]}', '');
    running = startRun(config);
    await waitHealth(port, 'the first build', (h) => h.code === 200);
    await waitFor('cache.db acknowledged on app.db', () => acks(app, cache) === 1);
    running.child.kill('SIGTERM');
    await running.exited;

    // cache.db moved to other.db: built again from it.
    for (const f of fs.readdirSync(tmp).filter((f) => f.startsWith('cache.db') && !f.endsWith('-follower'))) fs.rmSync(path.join(tmp, f));
    file('', '{path: cache.db, projections: ["*"]}');
    const plan = await planPipeline(await loadPipeline(config));
    expect(plan.sources.flatMap((s) => s.acknowledgements.map((a) => `${path.basename(s.path)}:${a.projection}:${a.does}`))).toEqual([
      'app.db:issues:forget',
    ]);
    running = startRun(config);
    await waitHealth(port, 'cache.db built from other.db', (h) => h.code === 200);
    await waitFor('cache.db forgotten on app.db', () => acks(app, cache) === 0, 15_000);
    await waitFor('cache.db acknowledged on other.db', () => acks(other, cache) === 1, 15_000).catch(() => undefined);
    expect(acks(other, cache)).toBe(1);
  }, 90_000);
});
