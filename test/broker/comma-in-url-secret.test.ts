// a ',' of a password or token written in the NATS URL is part of the login, not a server separator, and no part of the secret is printed
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { NatsServer } from '../support/nats-server.ts';
import { makeDir, removeDir, trackerSource, runCliAsync } from '../cli/support/cli.ts';
import { splitServers, withoutCredentials } from '../../src/internal.ts';

/*
 * Review round 2, broker bug 3. A --nats URL whose password holds an '@'
 * before a ',' (nats://app:p@ssw0rd,Zq9@HOST), or whose token holds a ','
 * (nats://s3cr3t,t0ken@HOST), was split at the ',' as two servers: the
 * login failed (BROKER_UNREACHABLE, BROKER_AUTH_FAILED) and the error
 * printed the rest of the secret as a server name ("nats://ssw0rd,HOST",
 * "getaddrinfo ENOTFOUND ssw0rd"). A server's login now runs to its last
 * '@' before the next server that starts with a scheme (nats://, tls://):
 * a ',' inside it is part of it. Servers are split at a ',' followed by a
 * scheme, or, after the login, between host:port pieces. A failed login
 * with a URL that carries one says to write a ',' as %2C, and prints no
 * part of the secret.
 */

describe('a comma in a NATS URL', () => {
  test('splits servers, not a login', () => {
    expect(splitServers('nats://n1:4222,nats://n2:4222')).toEqual(['nats://n1:4222', 'nats://n2:4222']);
    expect(splitServers('nats://n1:4222, n2:4222')).toEqual(['nats://n1:4222', 'n2:4222']);
    expect(splitServers('nats://app:p@ssw0rd,Zq9@h:4222')).toEqual(['nats://app:p@ssw0rd,Zq9@h:4222']);
    expect(splitServers('nats://s3cr3t,t0ken@h:4222')).toEqual(['nats://s3cr3t,t0ken@h:4222']);
    expect(splitServers('nats://app:a,b,c@h1:4222,h2:4222')).toEqual(['nats://app:a,b,c@h1:4222', 'h2:4222']);
    expect(splitServers('nats://app:p,w@h1:4222,tls://app:p,w@h2:4222')).toEqual(['nats://app:p,w@h1:4222', 'tls://app:p,w@h2:4222']);
    expect(withoutCredentials('nats://app:p@ssw0rd,Zq9@h:4222,nats://h2')).toBe('nats://h:4222,nats://h2');
    expect(withoutCredentials('nats://s3cr3t,t0ken@h1:4222,h2:4222')).toBe('nats://h1:4222,h2:4222');
  });

  test('of a password (after an @) or a token logs in, and a wrong one is refused naming %2C and printing no part of it', async () => {
    const dir = makeDir();
    const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
    const cases = [
      { config: 'authorization { user: app, password: "p@ssw0rd,Zq9" }', login: 'app:p@ssw0rd,Zq9', wrong: 'app:p@ssw0rd,Wr0ng' },
      { config: 'authorization { token: "s3cr3t,t0ken" }', login: 's3cr3t,t0ken', wrong: 's3cr3t,wr0ng' },
    ];
    try {
      for (const c of cases) {
        const server = await NatsServer.start({ config: c.config });
        try {
          const url = (login: string) => server.url.replace('nats://', `nats://${login}@`);
          const ok = await runCliAsync(['publish', src, '--nats', url(c.login), '--json']);
          expect(ok.status, ok.stderr).toBe(0);
          const wrong = await runCliAsync(['publish', src, '--nats', url(c.wrong), '--json']);
          expect(wrong.status, wrong.stderr).toBe(1);
          expect(wrong.stderr).toContain(`BROKER_AUTH_FAILED: NATS at ${server.url} refused the login`);
          expect(wrong.stderr).toContain('%2C');
          for (const text of [ok.stdout, ok.stderr, wrong.stdout, wrong.stderr])
            expect(text).not.toMatch(/ssw0rd|Zq9|Wr0ng|s3cr3t|t0ken|wr0ng/);
        } finally {
          await server.dispose();
        }
      }
    } finally {
      removeDir(dir);
    }
  });
});
