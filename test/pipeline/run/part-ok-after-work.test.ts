// sluice run: a part that fails on every attempt is not ok in between (/healthz never 200, its retry waits grow), and one that recovers for real is ok again within seconds
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { NatsServer } from '../../support/nats-server.ts';
import { onDatabase, scalar, type Spawned } from '../../cli/support/cli.ts';
import { enable } from '../../../src/capture/index.ts';
import {
  appSource,
  commitNow,
  freePort,
  healthz,
  holdWriteLock,
  kill,
  logLines,
  put,
  py,
  startRun,
  waitForRun,
  waitHealth,
} from '../support/run.ts';

/*
 * A part was ok (its failure cleared, its backoff reset) as soon as it had
 * started: a subscribe part as soon as its plan was made, before it had
 * applied anything. One that failed on its first batch at every attempt
 * (here: its target held locked by another process past the busy timeout)
 * logged `recovered` at each attempt, showed state running with no failure
 * until the batch failed again (/healthz 200 meanwhile, the replica stale),
 * and never waited more than 500 ms between attempts. Now a part is ok
 * only once it has done its work: a subscribe part once it has committed
 * (or skipped as applied) what the stream held after its target, or found
 * nothing to apply.
 */

let running: Spawned | undefined;
let nats: NatsServer | undefined;
let app: ChildProcess | undefined;
afterEach(async () => {
  app?.kill();
  app = undefined;
  kill(running);
  await nats?.dispose();
  nats = undefined;
});

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a subscribe part failing on every attempt keeps /healthz 503 and backs off; once its cause is gone it is ok again within seconds', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const replica = path.join(tmp, 'replica.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    const sourceId = onDatabase(src, (db) => enable(db, ['issues']).sourceId);
    nats = await NatsServer.start();
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues]
    publish: {nats: "${nats.url}"}
subscribe:
  - {nats: "${nats.url}", source: "${sourceId}", path: replica.db, projections: ["*"]}
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config);
    const r = running;
    await waitHealth(port, 'publish and subscribe running', (h) => h.code === 200, 60_000);
    await waitForRun(r, 'the replica built', () => scalar(replica, 'SELECT count(*) FROM issues') === 50n);

    // Another process holds the replica's write lock: each attempt of the subscribe part plans, then fails on the batch.
    app = await holdWriteLock(replica, 60);
    py(src, `con.execute("INSERT INTO issues VALUES (51, 'while the replica is locked', 'open')")`);
    const subscribeFailures = () => logLines(r).filter((l) => l.part.startsWith('subscribe:') && l.event === 'failed');
    await waitForRun(r, 'the subscribe part failing', () => subscribeFailures().length >= 1, 30_000);

    // While it keeps failing, /healthz is never 200 (before: 200 from each attempt's start until its batch failed again).
    const codes: number[] = [];
    const ok: string[] = []; // when a 200 was seen, to read beside the part's log if this fails
    // At least 14 s, and on until its third failure (each attempt waits out a 5 s busy timeout: slower on a loaded machine).
    const until = Date.now() + 14_000;
    const latest = Date.now() + 40_000;
    while ((Date.now() < until || subscribeFailures().length < 3) && Date.now() < latest) {
      const code = (await healthz(port)).code;
      codes.push(code);
      if (code === 200) ok.push(new Date().toISOString());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const subscribe = logLines(r).filter((l) => l.part.startsWith('subscribe:'));
    expect(subscribeFailures().length, 'it went on failing').toBeGreaterThanOrEqual(3);
    expect(
      codes.filter((c) => c === 200).length,
      `/healthz answers of ${codes.length} polls while it fails (200 from ${ok[0]} to ${ok.at(-1)}; the part's log: ${JSON.stringify(subscribe)})`,
    ).toBe(0);
    expect(subscribe.filter((l) => l.event === 'recovered').map((l) => l.msg)).toEqual([]);
    // Its waits grow as docs/cli.md says (before: 500 ms every time).
    const waits = subscribe.filter((l) => l.event === 'retry').map((l) => Number(l.retryMs));
    expect(waits.slice(0, 3)).toEqual([500, 1000, 2000]);
    expect(scalar(replica, 'SELECT count(*) FROM issues')).toBe(50n);

    // The other process commits: the part's next attempt applies the batch, and it is ok again.
    commitNow(app);
    const since = Date.now();
    await waitHealth(port, 'healthy once the lock is gone', (h) => h.code === 200, 30_000);
    await waitForRun(r, 'the row applied', () => scalar(replica, 'SELECT count(*) FROM issues') === 51n);
    // Within its next attempt: at most the last wait (4 s here) and one batch later.
    expect(Date.now() - since).toBeLessThan(15_000);
    expect(logLines(r).some((l) => l.part.startsWith('subscribe:') && l.event === 'recovered')).toBe(true);
    expect(r.child.exitCode).toBeNull();
  }, 120_000);
});
