// a creds file of a user of the account logs in and one of another operator is refused
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { NatsServer } from '../support/nats-server.ts';
import { operatorSetup } from '../support/nats-jwt.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, parseJson, dumpTables, expectOneLineError } from '../cli/support/cli.ts';
import { sourceIdOf } from './support/broker.ts';

/*
 * A NATS server in operator mode (decentralized auth: an operator, an
 * account with JetStream, its users' JWTs): publish, subscribe and health
 * log in with a user's `.creds` file (--nats-creds), and a `.creds` file of
 * a user another operator signed is refused with BROKER_AUTH_FAILED, one
 * line naming the server and the file. Before, only a URL could be given.
 */

const setup = operatorSetup();
let server: NatsServer;
let dir: string;

beforeAll(async () => {
  server = await NatsServer.start({ config: setup.config });
  dir = makeDir();
}, 60_000);

afterAll(async () => {
  await server?.dispose();
  removeDir(dir);
});

describe('a broker in operator mode', () => {
  test('a .creds file of a user of the account logs in to publish, subscribe and health; one of another operator is refused', async () => {
    const src = trackerSource(path.join(dir, 'app.db'), ['labels']);
    const sid = sourceIdOf(src);
    const tgt = path.join(dir, 'cache.db');
    const creds = path.join(dir, 'app.creds');
    fs.writeFileSync(creds, setup.creds);
    const foreign = path.join(dir, 'foreign.creds');
    fs.writeFileSync(foreign, operatorSetup().creds);

    const published = await runCliAsync(['publish', src, '--nats', server.url, '--nats-creds', creds, '--json']);
    expect(published.status, published.stderr).toBe(0);
    const sub = await runCliAsync(['subscribe', tgt, '--nats', server.url, '--nats-creds', creds, '--source', sid, '--json']);
    expect(sub.status, sub.stderr).toBe(0);
    expect(dumpTables(tgt, ['labels'])).toEqual(dumpTables(src, ['labels']));
    const [h, refused] = await Promise.all([
      runCliAsync(['health', tgt, '--json', '--nats-creds', creds]),
      runCliAsync(['publish', src, '--nats', server.url, '--nats-creds', foreign]),
    ]);
    expect(h.status, h.stdout + h.stderr).toBe(0);
    expect(parseJson(h, S.healthOutput).projections.map((p) => p.lagEvents)).toEqual([0]);
    expect(refused.status).toBe(1);
    expectOneLineError(refused, 'BROKER_AUTH_FAILED');
    expect(refused.stderr).toContain(`NATS at ${server.url} refused the login with the credentials file ${foreign}`);
  });

  // Before, the client's "unable to parse credentials" came as BROKER_UNREACHABLE: "Start nats-server with JetStream".
  test('a .creds file that cannot be parsed (a truncated copy, another file, a broken seed) is BROKER_AUTH_FAILED naming the file', async () => {
    const src = trackerSource(path.join(dir, 'broken.db'), ['labels']);
    const sid = sourceIdOf(src);
    const seedless = path.join(dir, 'seedless.creds');
    fs.writeFileSync(seedless, setup.creds.slice(0, setup.creds.indexOf('USER NKEY SEED')));
    const badSeed = path.join(dir, 'bad-seed.creds');
    fs.writeFileSync(badSeed, setup.creds.replace(/\nSU[A-Z0-9]+\n/, '\nSUAXXXNOTASEED\n'));
    expect(fs.readFileSync(badSeed, 'utf8')).toContain('SUAXXXNOTASEED');
    for (const creds of [seedless, badSeed, src]) {
      const r = await runCliAsync(['subscribe', path.join(dir, 'new.db'), '--nats', server.url, '--source', sid, '--nats-creds', creds]);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'BROKER_AUTH_FAILED');
      expect(r.stderr).toContain(`the credentials file ${creds} cannot be used`);
      expect(r.stderr).not.toContain('SUAXXX');
      expect(fs.existsSync(path.join(dir, 'new.db'))).toBe(false);
    }
  });
});
