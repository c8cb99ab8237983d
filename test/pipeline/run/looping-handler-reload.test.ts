// sluice run: a handler that loops, then fixed while run runs: the stuck worker is terminated after its grace, the fixed one follows, and SIGTERM exits
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { scalar, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, healthz, kill, put, py, startRun, waitFor, waitHealth } from '../support/run.ts';

/*
 * A custom handler that loops never reads the worker's stop message. A
 * reload (its module fixed) waited for that worker for ever: the target's
 * part was already gone from the status, so /healthz said 200 over a target
 * nobody followed, every later reload queued behind it, and SIGTERM never
 * exited. Now the part shows `stopping` (503) while it stops, the worker is
 * terminated after its grace (SLUICE_STOP_GRACE_MS here; 30 s by default),
 * and the fixed handler applies what the looping one never committed.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

// `entered`: a file the looping handler writes as it enters its loop.
const handler = (loops: boolean, entered = '') =>
  `import fs from 'node:fs';
export default {
  version: '1',
  async init(_rows, { db, tables }) {
    await db.schema.createTable(tables.seen).ifNotExists().addColumn('id', 'integer').execute();
  },
  async apply(event, { db, tables }) {
    ${loops ? `if (event.after?.title === "loop") { fs.writeFileSync(${JSON.stringify(entered)}, ''); for (;;) {} }` : ''}
    await db.insertInto(tables.seen).values({ id: Number(event.key[0]) }).execute();
  },
};
`;

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a handler that loops, then fixed: the stuck worker is terminated, the fixed one applies every write, and SIGTERM exits 0', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    appSource(src);
    const entered = path.join(tmp, 'in-the-loop');
    put(path.join(tmp, 'handler.mjs'), handler(true, entered));
    const config = path.join(tmp, 'sluice.yml');
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues]
    targets:
      - path: cache.db
        projections: [{name: hooked, source: issues, kind: custom, module: ./handler.mjs, tables: [seen]}]
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config, { SLUICE_STOP_GRACE_MS: '3000' });
    await waitHealth(port, 'the first build', (h) => h.code === 200);
    py(src, `con.execute("UPDATE issues SET title = 'loop' WHERE id = 1")`);
    await waitFor('the worker in the loop', () => fs.existsSync(entered), 20_000);
    put(path.join(tmp, 'handler.mjs'), handler(false));
    // While the looping worker is asked to stop, the target is not followed: /healthz says so.
    const stopping = await waitHealth(port, 'the part stopping', (h) => h.status.run.parts.some((p) => p.state === 'stopping'), 10_000);
    expect(stopping.code).toBe(503);
    py(src, `con.execute("UPDATE issues SET title = 'after' WHERE id = 2")`);
    await waitFor(
      'both writes applied by the fixed handler',
      () => scalar(tgt, 'SELECT count(*) FROM seen WHERE id IN (1, 2)') === 2n,
      30_000,
    );
    await waitHealth(port, 'healthy again', (h) => h.code === 200, 20_000);
    expect(running.stdout() + running.stderr()).toMatch(/"event":"terminated"/);
    running.child.kill('SIGTERM');
    expect((await running.exited).status).toBe(0);
    expect((await healthz(port).catch(() => undefined)) === undefined).toBe(true);
  }, 90_000);
});
