// sluice run's subscribe part stops with TARGET_GONE when its target is deleted, and its retry rebuilds the target
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { NatsServer } from '../../support/nats-server.ts';
import { dumpTables, scalar, onDatabase, type Spawned } from '../../cli/support/cli.ts';
import { enable } from '../../../src/capture/index.ts';
import { appSource, freePort, kill, logLines, put, py, startRun, waitFor, waitHealth } from '../support/run.ts';

/*
 * A subscribe entry of sluice run applies the broker's stream to its target
 * through subscribe(), as sluice subscribe --follow does. Its target deleted
 * under it: it went on applying into the unlinked file, and the path stayed
 * empty for as long as the run ran. Now the part stops with TARGET_GONE
 * (the subscriber's own check), is retried as any failed part, and the
 * retry makes the declared target again from the stream's snapshot, as run
 * makes any declared target that is missing.
 */

let running: Spawned | undefined;
let nats: NatsServer | undefined;
afterEach(async () => {
  kill(running);
  await nats?.dispose();
  nats = undefined;
});

function removeTarget(target: string): void {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${target}${suffix}`, { force: true });
}

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a subscribed target deleted under the run: the part fails with TARGET_GONE, and its retry rebuilds the target from the stream', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
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
    await waitFor(
      'the replica built from the stream',
      () => fs.existsSync(replica) && scalar(replica, 'SELECT count(*) FROM issues') === 50n,
    );

    removeTarget(replica);
    py(src, `con.execute("UPDATE issues SET title = 'after the replica was deleted' WHERE id <= 10")`);
    await waitFor('the subscribe part stopping with TARGET_GONE', () =>
      logLines(r).some((l) => l.part.startsWith('subscribe:') && l.event === 'failed' && /TARGET_GONE/.test(l.msg)),
    );
    const line = logLines(r).find((l) => l.part.startsWith('subscribe:') && /TARGET_GONE/.test(l.msg));
    expect(line?.msg).toContain(replica);
    await waitFor(
      'the replica rebuilt at its path',
      () =>
        fs.existsSync(replica) &&
        JSON.stringify(dumpTables(replica, ['issues', 'comments'])) === JSON.stringify(dumpTables(src, ['issues', 'comments'])),
      60_000,
    );
    py(src, `con.execute("UPDATE issues SET title = 'after the rebuild' WHERE id <= 5")`);
    await waitFor(
      'the rebuilt replica followed',
      () => JSON.stringify(dumpTables(replica, ['issues', 'comments'])) === JSON.stringify(dumpTables(src, ['issues', 'comments'])),
      30_000,
    );
    expect(r.child.exitCode).toBeNull();
  });
});
