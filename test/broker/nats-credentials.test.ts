// a broker that requires the user and password given in the nats url is reached and the password is never printed
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { NatsServer } from '../support/nats-server.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, parseJson, sourceSeq } from '../cli/support/cli.ts';
import { sourceIdOf } from './support/broker.ts';

/*
 * A NATS server that requires a user and password: they are given in the
 * URL (`nats://user:pass@host:port`), the one way sluice takes them, so
 * publish, subscribe and health authenticate with them; a wrong password
 * fails with BROKER_AUTH_FAILED (BROKER_UNREACHABLE before the login was
 * told apart from a server that does not answer) naming the server without it. The password
 * is never printed (on stdout or stderr) and never stored in the target.
 * Before, the client was given the URL as it was, which it does not read
 * credentials from: every command failed with "Authorization Violation",
 * and printed the password in its error.
 */

describe('a broker that requires the user and password given in the NATS URL', () => {
  test('publish, subscribe and health reach it; a wrong password is refused; the password is never printed or stored', async () => {
    const dir = makeDir();
    const server = await NatsServer.start({ args: ['--user', 'sluice', '--pass', 's3cret'] });
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const tgt = path.join(dir, 'cache.db');
      const withSecret = server.url.replace('nats://', 'nats://sluice:s3cret@');
      const printed: string[] = [];
      const run = async (args: string[]) => {
        const r = await runCliAsync(args);
        printed.push(r.stdout, r.stderr);
        return r;
      };

      const published = await run(['publish', src, '--nats', withSecret]);
      expect(published.status, published.stderr).toBe(0);
      const sub = await run(['subscribe', tgt, '--nats', withSecret, '--source', sid]);
      expect(sub.status, sub.stderr).toBe(0);
      for (const f of [tgt, `${tgt}-wal`]) if (fs.existsSync(f)) expect(fs.readFileSync(f).includes('s3cret'), f).toBe(false);

      const h = await run(['health', tgt, '--json', '--nats', withSecret]);
      expect(h.status, h.stdout).toBe(0);
      expect(parseJson(h, S.healthOutput).projections[0]).toMatchObject({ name: 'comments', lagEvents: 0, sourceSeq: sourceSeq(src) });

      const wrong = await run(['publish', src, '--nats', server.url.replace('nats://', 'nats://sluice:wr0ng@')]);
      expect(wrong.status).toBe(1);
      expect(wrong.stderr).toContain('BROKER_AUTH_FAILED');
      expect(wrong.stderr).toContain(server.url);
      const wrongHealth = await run(['health', tgt, '--nats', server.url.replace('nats://', 'nats://sluice:wr0ng@')]);
      expect(wrongHealth.status).toBe(3);

      for (const text of printed) {
        expect(text).not.toContain('s3cret');
        expect(text).not.toContain('wr0ng');
      }
    } finally {
      await server.dispose();
      removeDir(dir);
    }
  });

  test('a password with @ and : in it, written in the URL as it is, logs in, and no part of it is printed', async () => {
    const dir = makeDir();
    // As a URL gets it from sluice.yml's "nats://sluice:${NATS_PASSWORD}@host" or a shell: not percent-encoded.
    const server = await NatsServer.start({ args: ['--user', 'sluice', '--pass', 'pa@ss:w0rd'] });
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const published = await runCliAsync(['publish', src, '--nats', server.url.replace('nats://', 'nats://sluice:pa@ss:w0rd@')]);
      expect(published.status, published.stderr).toBe(0);
      const wrong = await runCliAsync(['publish', src, '--nats', server.url.replace('nats://', 'nats://sluice:wr@ng:pw@')]);
      expect(wrong.status).toBe(1);
      expect(wrong.stderr).toContain(`BROKER_AUTH_FAILED: NATS at ${server.url} refused the login as user sluice`);
      for (const text of [published.stdout, published.stderr, wrong.stdout, wrong.stderr]) {
        expect(text).not.toMatch(/ss:w0rd|ng:pw/);
      }
    } finally {
      await server.dispose();
      removeDir(dir);
    }
  });

  // Before, the URL was split at the comma as a list of two servers, and the error printed "nats://sluice:Pa55".
  test('a password with a comma, written in the URL as it is, logs in as one server, and no part of it is printed or stored', async () => {
    const dir = makeDir();
    const server = await NatsServer.start({ args: ['--user', 'sluice', '--pass', 'Pa55,w0rd'] });
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const tgt = path.join(dir, 'cache.db');
      const url = (pw: string) => server.url.replace('nats://', `nats://sluice:${pw}@`);
      const published = await runCliAsync(['publish', src, '--nats', url('Pa55,w0rd')]);
      expect(published.status, published.stderr).toBe(0);
      const sub = await runCliAsync(['subscribe', tgt, '--nats', `${url('Pa55,w0rd')},${url('Pa55,w0rd')}`, '--source', sid]);
      expect(sub.status, sub.stderr).toBe(0);
      for (const f of [tgt, `${tgt}-wal`]) if (fs.existsSync(f)) expect(fs.readFileSync(f).includes('Pa55'), f).toBe(false);
      const wrong = await runCliAsync(['publish', src, '--nats', url('Pa55,wr0ng')]);
      expect(wrong.status).toBe(1);
      expect(wrong.stderr).toContain(`BROKER_AUTH_FAILED: NATS at ${server.url} refused the login as user sluice`);
      for (const text of [published.stdout, published.stderr, sub.stdout, sub.stderr, wrong.stdout, wrong.stderr]) {
        expect(text).not.toMatch(/Pa55|w0rd|wr0ng/);
      }
    } finally {
      await server.dispose();
      removeDir(dir);
    }
  });

  test('a base64 password (with / and +) written in the URL as it is logs in, and no part of it is printed or stored', async () => {
    const dir = makeDir();
    const server = await NatsServer.start({ args: ['--user', 'sluice', '--pass', 'q7/Zk+w9/Rm='] });
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const tgt = path.join(dir, 'cache.db');
      const url = (pw: string) => server.url.replace('nats://', `nats://sluice:${pw}@`);
      const published = await runCliAsync(['publish', src, '--nats', url('q7/Zk+w9/Rm=')]);
      expect(published.status, published.stderr).toBe(0);
      // A token exported for another broker does not override the login this URL carries.
      const sub = await runCliAsync(['subscribe', tgt, '--nats', url('q7/Zk+w9/Rm='), '--source', sid], {
        env: { SLUICE_NATS_TOKEN: 'a-token-for-another-broker' },
      });
      expect(sub.status, sub.stderr).toBe(0);
      for (const f of [tgt, `${tgt}-wal`]) if (fs.existsSync(f)) expect(fs.readFileSync(f).includes('Zk+w9'), f).toBe(false);
      const wrong = await runCliAsync(['publish', src, '--nats', url('x1/Yy+z2/Ab=')]);
      expect(wrong.status).toBe(1);
      expect(wrong.stderr).toContain(`BROKER_AUTH_FAILED: NATS at ${server.url} refused the login as user sluice`);
      for (const text of [published.stdout, published.stderr, sub.stdout, sub.stderr, wrong.stdout, wrong.stderr]) {
        expect(text).not.toMatch(/Zk\+w9|Yy\+z2/);
      }
    } finally {
      await server.dispose();
      removeDir(dir);
    }
  });
});
