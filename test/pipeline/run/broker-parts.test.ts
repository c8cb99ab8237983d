// sluice run publish and subscribe parts recover from a broker that goes away while local targets keep syncing
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { NatsServer } from '../../support/nats-server.ts';
import { dumpTables, scalar, onDatabase, type Spawned } from '../../cli/support/cli.ts';
import { enable } from '../../../src/capture/index.ts';
import { appSource, freePort, kill, logLines, put, py, startRun, waitFor, waitHealth } from '../support/run.ts';

/*
 * A pipeline that publishes a source and subscribes a replica from the
 * broker (issue 21, item 2, must-hold 5): when the broker goes away, the
 * publish and subscribe parts fail and retry by themselves while the local
 * target keeps syncing; once it is back, they recover and the replica
 * catches up, exact.
 */

let running: Spawned | undefined;
let nats: NatsServer | undefined;
afterEach(async () => {
  kill(running);
  await nats?.dispose();
  nats = undefined;
});

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a broker that goes away: publish and subscribe retry and recover by themselves while the local target keeps syncing', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const local = path.join(tmp, 'local.db');
    const replica = path.join(tmp, 'replica.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    const sourceId = onDatabase(src, (db) => enable(db, ['issues', 'comments']).sourceId);
    nats = await NatsServer.start();
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues, comments]
    targets: [{path: local.db, projections: ["*"]}]
    publish: {nats: "${nats.url}"}
subscribe:
  - {nats: "${nats.url}", source: "${sourceId}", path: replica.db, projections: ["*"]}
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config);
    const r = running;
    await waitHealth(port, 'publish and subscribe running', (h) => h.status.run.parts.every((p) => p.state === 'running'));
    await waitFor('the replica built from the stream', () => scalar(replica, 'SELECT count(*) FROM issues') === 50n);

    await nats.stop();
    py(src, `con.execute("UPDATE issues SET title = 'while the broker is away' WHERE id <= 10")`);
    await waitFor(
      'the local target applied the write',
      () => scalar(local, 'SELECT count(*) FROM issues WHERE title = ?', 'while the broker is away') === 10n,
    );
    // The part says it lost the broker (the client reconnecting by itself, or a failure retried with backoff).
    await waitFor('a broker part losing the broker', () =>
      logLines(r).some(
        (l) =>
          (l.part.startsWith('publish:') || l.part.startsWith('subscribe:')) && (l.event === 'failed' || /lost the connection/.test(l.msg)),
      ),
    );

    await nats.restart();
    await waitFor(
      'the replica caught up',
      () => JSON.stringify(dumpTables(replica, ['issues', 'comments'])) === JSON.stringify(dumpTables(src, ['issues', 'comments'])),
      60_000,
    );
    const back = await waitHealth(port, 'every part running again', (h) =>
      h.status.run.parts.every((p) => p.state === 'running' && p.failure === null),
    );
    expect(back.status.run.parts.map((p) => p.kind).sort()).toEqual(['capture', 'http', 'publish', 'subscribe', 'target']);
    expect(dumpTables(local, ['issues', 'comments'])).toEqual(dumpTables(src, ['issues', 'comments']));
  });
});
