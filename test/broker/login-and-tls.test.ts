// a broker with an account and tls lets in only who belongs and refusals write nothing
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { NatsServer } from '../support/nats-server.ts';
import { makeCertificates, type TestCertificates } from '../support/tls-certs.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, parseJson, dumpTables, expectOneLineError, scalar } from '../cli/support/cli.ts';
import { sourceIdOf } from './support/broker.ts';
import { loadPipeline } from '../../src/pipeline/index.ts';
import { Publisher, subscribe } from '../../src/broker/index.ts';

/*
 * A NATS deployment with accounts and TLS: a server whose config file
 * defines an account with JetStream and one user with a password, and TLS
 * with a certificate signed by the test's own CA, verifying clients. publish
 * and subscribe log in as that user (the password from the environment or
 * a file, never an argument), trust the CA given with --nats-tls-ca and show
 * a client certificate; the target is the source's tables, and neither it
 * nor anything printed holds the password. A wrong password, a server
 * certificate no CA given vouches for, and a CA or creds file that does not
 * exist are each one line naming the server and the fix, exit 1, and no
 * file is created. Before, publish and subscribe took a URL and nothing else.
 */

const PASSWORD = 'pw-9f3e1c';
let certs: TestCertificates;
let server: NatsServer;
let dir: string;

beforeAll(async () => {
  certs = makeCertificates();
  server = await NatsServer.start({
    config: `
accounts {
  APP { jetstream: enabled, users: [ { user: sluice, password: "${PASSWORD}" } ] }
}
tls {
  cert_file: "${certs.serverCert}"
  key_file: "${certs.serverKey}"
  ca_file: "${certs.ca}"
  verify: true
  timeout: 2
}
`,
  });
  dir = makeDir();
}, 60_000);

afterAll(async () => {
  await server?.dispose();
  certs?.dispose();
  removeDir(dir);
});

/** Every file in `d`, recursively (what a refused command must not add to). */
function filesIn(d: string): string[] {
  return fs.readdirSync(d, { recursive: true, encoding: 'utf8' }).sort();
}

describe('a broker with an account and TLS', () => {
  test('publish and subscribe log in with a password from the environment or a file over TLS with a CA and client certificate; nothing stores or prints the password', async () => {
    const src = trackerSource(path.join(dir, 'app.db'), ['comments', 'labels']);
    const sid = sourceIdOf(src);
    const tgt = path.join(dir, 'cache.db');
    const pwFile = path.join(dir, 'nats-password');
    fs.writeFileSync(pwFile, `${PASSWORD}\n`);
    const tls = ['--nats-tls-ca', certs.ca, '--nats-tls-cert', certs.clientCert, '--nats-tls-key', certs.clientKey];
    const login = ['--nats', server.url, '--nats-user', 'sluice', ...tls];

    const published = await runCliAsync(['publish', src, ...login, '--json'], { env: { SLUICE_NATS_PASSWORD: PASSWORD } });
    expect(published.status, published.stderr).toBe(0);
    expect(parseJson(published, S.publishOutput).snapshots).toHaveLength(1);
    const sub = await runCliAsync(['subscribe', tgt, ...login, '--nats-password-file', pwFile, '--source', sid, '--json']);
    expect(sub.status, sub.stderr).toBe(0);
    expect(dumpTables(tgt, ['comments', 'labels'])).toEqual(dumpTables(src, ['comments', 'labels']));
    // The target records the server it reads (health reads the lag there), not how it logged in.
    expect(String(scalar(tgt, "SELECT fed_by FROM _sluice_projections WHERE name = 'comments'"))).toContain(server.url);
    for (const f of [tgt, `${tgt}-wal`]) if (fs.existsSync(f)) expect(fs.readFileSync(f).includes(PASSWORD), f).toBe(false);

    const h = await runCliAsync(['health', tgt, '--json', '--nats-user', 'sluice', '--nats-password-file', pwFile, ...tls]);
    expect(h.status, h.stdout + h.stderr).toBe(0);
    expect(parseJson(h, S.healthOutput).projections.map((p) => p.lagEvents)).toEqual([0, 0]);

    for (const r of [published, sub, h]) expect(r.stdout + r.stderr).not.toContain(PASSWORD);
  });

  test('a wrong password, an untrusted server or client certificate, and a CA or creds file that does not exist are one line naming the server, exit 1, and no file is created', async () => {
    const sub = path.join(dir, 'refusals');
    fs.mkdirSync(sub);
    const src = trackerSource(path.join(sub, 'app.db'), ['comments']);
    const sid = sourceIdOf(src);
    const tgt = path.join(sub, 'never.db');
    const tls = ['--nats-tls-ca', certs.ca, '--nats-tls-cert', certs.clientCert, '--nats-tls-key', certs.clientKey];
    const foreign = makeCertificates();
    const before = filesIn(sub);
    const cases: { args: string[]; env?: Record<string, string>; code: string; fix: RegExp }[] = [
      {
        args: ['subscribe', tgt, '--nats', server.url, '--nats-user', 'sluice', ...tls, '--source', sid],
        env: { SLUICE_NATS_PASSWORD: 'wr0ng-pw' },
        code: 'BROKER_AUTH_FAILED',
        fix: /refused the login as user sluice.*Check the credentials/,
      },
      {
        args: ['publish', src, '--nats', server.url, '--nats-user', 'sluice', ...tls],
        env: { SLUICE_NATS_PASSWORD: 'wr0ng-pw' },
        code: 'BROKER_AUTH_FAILED',
        fix: /refused the login as user sluice/,
      },
      {
        args: [
          'subscribe',
          tgt,
          '--nats',
          server.url,
          '--nats-user',
          'sluice',
          '--nats-tls-cert',
          certs.clientCert,
          '--nats-tls-key',
          certs.clientKey,
          '--source',
          sid,
        ],
        env: { SLUICE_NATS_PASSWORD: PASSWORD },
        code: 'BROKER_TLS_FAILED',
        fix: /--nats-tls-ca/,
      },
      {
        args: [
          'publish',
          src,
          '--nats',
          server.url,
          '--nats-user',
          'sluice',
          ...tls.slice(2),
          '--nats-tls-ca',
          path.join(sub, 'no-such-ca.pem'),
        ],
        env: { SLUICE_NATS_PASSWORD: PASSWORD },
        code: 'BROKER_TLS_FAILED',
        fix: /CA file .*no-such-ca\.pem cannot be read/,
      },
      // A client certificate of another CA: the server closes the handshake, and the client only says "timeout" (it was
      // BROKER_UNREACHABLE, "Start nats-server with JetStream", with no word of TLS).
      {
        args: [
          'subscribe',
          tgt,
          '--nats',
          server.url,
          '--nats-user',
          'sluice',
          '--nats-tls-ca',
          certs.ca,
          '--nats-tls-cert',
          foreign.clientCert,
          '--nats-tls-key',
          foreign.clientKey,
          '--source',
          sid,
        ],
        env: { SLUICE_NATS_PASSWORD: PASSWORD },
        code: 'BROKER_TLS_FAILED',
        fix: new RegExp(`may have refused the TLS handshake.*client certificate ${foreign.clientCert} \\(--nats-tls-cert`),
      },
      {
        args: ['subscribe', tgt, '--nats', server.url, '--nats-creds', path.join(sub, 'no-such.creds'), ...tls, '--source', sid],
        code: 'BROKER_AUTH_FAILED',
        fix: /credentials file .*no-such\.creds cannot be read/,
      },
    ];
    const results = await Promise.all(cases.map((c) => runCliAsync(c.args, c.env === undefined ? {} : { env: c.env })));
    for (const [i, r] of results.entries()) {
      const c = cases[i] as (typeof cases)[number];
      expect(r.status, `${c.args.join(' ')}: ${r.stderr}`).toBe(1);
      expectOneLineError(r, c.code);
      expect(r.stderr).toContain(server.url);
      expect(r.stderr).toMatch(c.fix);
      expect(r.stdout + r.stderr).not.toContain(PASSWORD);
    }
    expect(filesIn(sub)).toEqual(before);
    foreign.dispose();
  });

  test('the connection a pipeline file declares (user, ${NATS_PASSWORD}, tls files relative to it) is what publish and subscribe take', async () => {
    const sub = path.join(dir, 'pipeline');
    fs.mkdirSync(path.join(sub, 'tls'), { recursive: true });
    for (const f of ['ca.pem', 'client.pem', 'client-key.pem']) fs.copyFileSync(path.join(certs.dir, f), path.join(sub, 'tls', f));
    const src = trackerSource(path.join(sub, 'app.db'), ['labels']);
    const sid = sourceIdOf(src);
    const nats = `{nats: "${server.url}", user: sluice, password: "\${NATS_PASSWORD}", tls: {ca: tls/ca.pem, cert: tls/client.pem, key: tls/client-key.pem}}`;
    const file = path.join(sub, 'sluice.yml');
    fs.writeFileSync(
      file,
      `sources:\n  - path: app.db\n    capture: [labels]\n    publish: ${nats}\nsubscribe:\n  - ${nats.slice(0, -1)}, source: "${sid}", path: replica.db}\n`,
    );
    const p = await loadPipeline(file, { NATS_PASSWORD: PASSWORD });
    const publish = p.sources[0]?.publish;
    const subscription = p.subscriptions[0];
    if (publish === undefined || subscription === undefined) throw new Error('the file declares both');
    const publisher = await Publisher.open(src, publish);
    try {
      expect((await publisher.runOnce()).snapshots).toHaveLength(1);
    } finally {
      await publisher.close();
    }
    const r = await subscribe(subscription.path, subscription.nats, { sourceId: subscription.sourceId });
    expect(r.projections.map((x) => x.state)).toEqual(['active']);
    expect(dumpTables(subscription.path, ['labels'])).toEqual(dumpTables(src, ['labels']));

    const wrong = await loadPipeline(file, { NATS_PASSWORD: 'wr0ng-pw' });
    const refused = await subscribe(path.join(sub, 'never.db'), wrong.subscriptions[0]?.nats ?? '', { sourceId: sid }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused?.message).toMatch(new RegExp(`^NATS at ${server.url} refused the login as user sluice`));
    expect(fs.existsSync(path.join(sub, 'never.db'))).toBe(false);
  });

  test("health --config reads a subscribed target's lag logging in as its subscribe entry says, and exits 0 when it is caught up", async () => {
    const sub = path.join(dir, 'health-config');
    fs.mkdirSync(path.join(sub, 'tls'), { recursive: true });
    for (const f of ['ca.pem', 'client.pem', 'client-key.pem']) fs.copyFileSync(path.join(certs.dir, f), path.join(sub, 'tls', f));
    const src = trackerSource(path.join(sub, 'app.db'), ['labels']);
    const sid = sourceIdOf(src);
    const nats = `{nats: "${server.url}", user: sluice, password: "\${NATS_PASSWORD}", tls: {ca: tls/ca.pem, cert: tls/client.pem, key: tls/client-key.pem}}`;
    const file = path.join(sub, 'sluice.yml');
    fs.writeFileSync(file, `subscribe:\n  - ${nats.slice(0, -1)}, source: "${sid}", path: replica.db}\n`);
    const p = await loadPipeline(file, { NATS_PASSWORD: PASSWORD });
    const subscription = p.subscriptions[0];
    if (subscription === undefined) throw new Error('the file declares one');
    const publisher = await Publisher.open(src, subscription.nats);
    try {
      await publisher.runOnce();
    } finally {
      await publisher.close();
    }
    await subscribe(subscription.path, subscription.nats, { sourceId: sid });

    const h = await runCliAsync(['health', '--config', file, '--json'], { env: { NATS_PASSWORD: PASSWORD } });
    const out = parseJson(h, S.pipelineHealthOutput);
    expect(out.targets[0]?.projections.map((x) => [x.name, x.lagEvents, x.problems])).toEqual([['labels', 0, []]]);
    expect(h.status, h.stdout).toBe(0);
    expect(h.stdout + h.stderr).not.toContain(PASSWORD);
  });
});
