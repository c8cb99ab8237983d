// a subscribe entry with its login in its nats url is healthy once in sync, and the password is shown nowhere
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { NatsServer } from '../../support/nats-server.ts';
import { dumpTables, onDatabase, runCliAsync, type Spawned } from '../../cli/support/cli.ts';
import { enable } from '../../../src/capture/index.ts';
import { appSource, freePort, kill, put, py, startRun, waitFor, waitHealth } from '../support/run.ts';

/*
 * docs/pipeline.md and docs/broker.md say a subscribe entry may carry its
 * login in its URL (`nats://app:${NATS_PASSWORD}@host:4222`). The replica
 * was kept in sync, but its lag was read from the servers the target
 * records (without credentials, as they must be) with the entry's `auth`
 * alone, which such an entry does not have: the broker refused the login
 * (BROKER_AUTH_FAILED), so /healthz stayed 503 and `health --config` exited
 * 3 for good. The lag is now read with the entry's own URL when its servers
 * are the recorded ones; the password is in no answer, log or file.
 */

const PASSWORD = 'S3cret-pw-4d1a';

let running: Spawned | undefined;
let nats: NatsServer | undefined;
afterEach(async () => {
  kill(running);
  await nats?.dispose();
  nats = undefined;
});

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a subscribe entry whose login is in its URL is healthy once in sync: /healthz 200 and health --config exit 0', async ({ tmp }) => {
    nats = await NatsServer.start({ config: `authorization { users = [ { user: app, password: "${PASSWORD}" } ] }\n` });
    const src = path.join(tmp, 'app.db');
    const replica = path.join(tmp, 'replica.db');
    appSource(src);
    const sourceId = onDatabase(src, (db) => enable(db, ['issues', 'comments']).sourceId);
    const port = await freePort();
    const config = path.join(tmp, 'sluice.yml');
    const host = nats.url.replace('nats://', '');
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues, comments]
    targets: []
    publish: {nats: "${nats.url}", user: app, password: "\${NATS_PASSWORD}"}
subscribe:
  - {nats: "nats://app:\${NATS_PASSWORD}@${host}", source: "${sourceId}", path: replica.db, projections: ["*"]}
listen: 127.0.0.1:${port}
`,
    );
    const env = { NATS_PASSWORD: PASSWORD };
    running = startRun(config, env);
    await waitFor(
      'the replica built from the stream',
      () => fs.existsSync(replica) && dumpTables(replica, ['issues']).issues?.length === 50,
    );
    py(src, `con.execute("UPDATE issues SET title = 'after the build' WHERE id <= 5")`);
    await waitFor(
      'the replica in sync',
      () => JSON.stringify(dumpTables(replica, ['issues', 'comments'])) === JSON.stringify(dumpTables(src, ['issues', 'comments'])),
    );

    const healthy = await waitHealth(port, 'the replica healthy', (h) => h.code === 200, 20_000);
    const target = healthy.status.targets.find((t) => t.path === replica);
    expect(target?.ok).toBe(true);
    const body = await (await fetch(`http://127.0.0.1:${port}/healthz`)).text();
    expect(body).not.toContain('BROKER_AUTH_FAILED');

    const health = await runCliAsync(['health', '--config', config, '--json'], { env });
    expect(health.status, `${health.stdout}${health.stderr}`).toBe(0);

    // The password is in no answer, log line or file.
    const said: Record<string, string> = {
      '/healthz': body,
      'health --config': `${health.stdout}${health.stderr}`,
      'run stderr': running.stderr(),
    };
    for (const [what, text] of Object.entries(said)) expect(text.includes(PASSWORD), what).toBe(false);
    for (const f of fs.readdirSync(tmp)) expect(fs.readFileSync(path.join(tmp, f)).includes(PASSWORD), f).toBe(false);

    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ status: 0, signal: null });
  }, 90_000);
});
