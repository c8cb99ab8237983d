// sluice run with a target an app holds locked past the busy timeout: the target part says TARGET_BUSY naming the file and run's own repair, not sync's flags
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { type Spawned } from '../../cli/support/cli.ts';
import { appSource, commitNow, freePort, holdWriteLock, kill, put, py, startRun, waitHealth } from '../support/run.ts';

/*
 * A target's worker follows with sync's code, whose error for a target held
 * locked past the busy timeout told the user to run sync again or to pass
 * --busy-timeout: neither is something a user of sluice run can do (run
 * retries by itself, and takes no such option). Run's log, /healthz and
 * status page now say what run does about it.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test("a target locked by another process's open write transaction past the busy timeout: TARGET_BUSY naming it and what run does, then it recovers", async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const target = path.join(tmp, 'cache.db');
    appSource(src);
    const config = path.join(tmp, 'sluice.yml');
    const port = await freePort();
    put(
      config,
      `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - path: cache.db\n        projections: ["*"]\nlisten: 127.0.0.1:${port}\n`,
    );
    running = startRun(config);
    await waitHealth(port, 'built', (h) => h.code === 200, 30_000);
    // Another process opens a write transaction on the target and keeps it past the busy timeout (5 s): until the
    // failure is seen, then it commits (at the latest after 20 s).
    const app = await holdWriteLock(target, 20);
    py(src, `con.execute("UPDATE issues SET title = 'moved' WHERE id = 1")`);
    const busy = await waitHealth(
      port,
      'the target part failing',
      (h) => h.status.run.parts.some((p) => p.kind === 'target' && p.failure !== null),
      30_000,
    );
    const failure = busy.status.run.parts.find((p) => p.kind === 'target')?.failure;
    expect(failure?.code).toBe('TARGET_BUSY');
    expect(failure?.message).toContain(target);
    expect(failure?.message).toMatch(/sluice run tries again/);
    expect(failure?.message, "sync's option, which run does not take").not.toMatch(/--busy-timeout|run sync again/);
    commitNow(app);
    await waitHealth(port, 'healthy once the other process committed', (h) => h.code === 200, 40_000);
    app.kill();
  }, 90_000);
});
