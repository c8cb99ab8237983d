// sluice run started while an app holds a write transaction on the source: its capture part says SOURCE_BUSY naming the file, then recovers
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { type Spawned } from '../../cli/support/cli.ts';
import { appSource, commitNow, freePort, holdWriteLock, kill, put, startRun, waitHealth } from '../support/run.ts';

/*
 * The capture part enables declared capture with the library's enable(),
 * whose SQLite error for a source another process holds locked is a bare
 * "SQLITE_BUSY: database is locked", naming nothing. `sluice enable` said
 * SOURCE_BUSY with the file; run's log, /healthz and status page said
 * SQLITE_BUSY. Now they say SOURCE_BUSY, naming the source.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test("a source locked by an app's open write transaction: the capture part fails with SOURCE_BUSY naming it, and recovers once it commits", async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    appSource(src);
    const config = path.join(tmp, 'sluice.yml');
    const port = await freePort();
    put(
      config,
      `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - path: cache.db\n        projections: ["*"]\nlisten: 127.0.0.1:${port}\n`,
    );
    // An app opens a write transaction and keeps it until the part has failed (a fixed 6 s ran out before run's
    // busy timeout did on a loaded machine: the part then never failed, and the test waited for nothing).
    const app = await holdWriteLock(src, 60);
    running = startRun(config);
    const busy = await waitHealth(
      port,
      'the capture part failing',
      (h) => h.status.run.parts.some((p) => p.kind === 'capture' && p.failure !== null),
      20_000,
    );
    const failure = busy.status.run.parts.find((p) => p.kind === 'capture')?.failure;
    expect(failure?.code).toBe('SOURCE_BUSY');
    expect(failure?.message).toContain(src);
    commitNow(app);
    await waitHealth(port, 'healthy once the app committed', (h) => h.code === 200, 40_000);
    app.kill();
  }, 90_000);
});
