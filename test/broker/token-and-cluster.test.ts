// a token from a file or the environment logs in and a cluster whose first server is down still connects
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { freePort, NatsServer } from '../support/nats-server.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, parseJson, dumpTables, expectOneLineError } from '../cli/support/cli.ts';
import { sourceIdOf } from './support/broker.ts';

/*
 * A server that requires a token (its config file's authorization block):
 * publish reads it from --nats-token-file, subscribe from SLUICE_NATS_TOKEN;
 * both are given two servers, the first of which no server listens on (a
 * cluster member that is down), and still connect. A missing token is
 * refused with BROKER_AUTH_FAILED saying how to give one. Before, a token
 * could only be put in the URL, where `ps` shows it, and --nats took one server.
 */

const TOKEN = 'tok-51c0ffee';
let server: NatsServer;
let dir: string;

beforeAll(async () => {
  server = await NatsServer.start({ config: `authorization { token: "${TOKEN}" }\n` });
  dir = makeDir();
}, 60_000);

afterAll(async () => {
  await server?.dispose();
  removeDir(dir);
});

describe('a broker that requires a token, in a cluster with a server down', () => {
  test('a token from a file or the environment logs in, with the down server listed first; without one the login is refused', async () => {
    const src = trackerSource(path.join(dir, 'app.db'), ['labels']);
    const sid = sourceIdOf(src);
    const tgt = path.join(dir, 'cache.db');
    const tokenFile = path.join(dir, 'nats-token');
    fs.writeFileSync(tokenFile, `${TOKEN}\n`);
    const down = `nats://127.0.0.1:${await freePort()}`;

    const published = await runCliAsync(['publish', src, '--nats', `${down},${server.url}`, '--nats-token-file', tokenFile, '--json']);
    expect(published.status, published.stderr).toBe(0);
    expect(parseJson(published, S.publishOutput).snapshots).toHaveLength(1);
    const sub = await runCliAsync(['subscribe', tgt, '--nats', down, '--nats', server.url, '--source', sid, '--json'], {
      env: { SLUICE_NATS_TOKEN: TOKEN },
    });
    expect(sub.status, sub.stderr).toBe(0);
    expect(parseJson(sub, S.subscribeOutput).projections.map((p) => p.state)).toEqual(['active']);
    expect(dumpTables(tgt, ['labels'])).toEqual(dumpTables(src, ['labels']));

    const refused = await runCliAsync(['publish', src, '--nats', server.url]);
    expect(refused.status).toBe(1);
    expectOneLineError(refused, 'BROKER_AUTH_FAILED');
    expect(refused.stderr).toContain(server.url);
    expect(refused.stderr).toContain('--nats-token-file');
    for (const r of [published, sub, refused]) expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });
});
