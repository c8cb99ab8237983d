// a publish or subscribe entry takes a login and tls files relative to the file and refuses what does not go together
import fs from 'node:fs';
import path from 'node:path';
import { loadPipeline } from '../../src/pipeline/index.ts';
import { SluiceError } from '../../src/errors.ts';
import { describe, expect, test } from '../support/fixtures.ts';

/*
 * The NATS keys of a pipeline file (docs/pipeline.md): `publish` and each
 * `subscribe[]` entry take the servers (a list, or a comma list from one
 * variable), one way to log in (creds, user and password, token), and TLS
 * files. They are read into the connection publish and subscribe take, with
 * file paths relative to the pipeline file and the password from the
 * environment; two ways to log in, a user without a password, a cert
 * without its key and a file that does not exist are refused with the line.
 * Before, `nats` was the only key and anything else was an unknown key.
 */

function write(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

const SCHEMA = 'CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT);';

describe('the NATS keys of a pipeline file', () => {
  test('publish and subscribe entries read servers, a login and TLS files relative to the file', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    for (const f of ['tls/ca.pem', 'tls/client.pem', 'tls/client-key.pem', 'nats/app.creds']) write(tmp, f, 'x');
    const file = write(
      tmp,
      'sluice.yml',
      `sources:
  - path: app.db
    capture: [issues]
    publish:
      nats: "\${NATS_URLS}"
      user: app
      password: "\${NATS_PASSWORD}"
      tls: {ca: tls/ca.pem, cert: tls/client.pem, key: tls/client-key.pem}
subscribe:
  - {nats: [nats://a:4222, nats://b:4222], creds: nats/app.creds, tls: {ca: tls/ca.pem}, source: S1, path: r1.db}
  - {nats: nats://a:4222, token: "\${NATS_TOKEN}", source: S2, path: r2.db}
`,
    );
    const p = await loadPipeline(file, { NATS_URLS: 'tls://n1:4222, tls://n2:4222', NATS_PASSWORD: 'pw', NATS_TOKEN: 'tk' });
    const tls = (f: string) => path.join(tmp, 'tls', f);
    expect(p.sources[0]?.publish).toEqual({
      servers: ['tls://n1:4222', 'tls://n2:4222'],
      auth: { user: 'app', password: 'pw' },
      tls: { ca: tls('ca.pem'), cert: tls('client.pem'), key: tls('client-key.pem') },
    });
    expect(p.subscriptions.map((s) => s.nats)).toEqual([
      { servers: ['nats://a:4222', 'nats://b:4222'], auth: { creds: path.join(tmp, 'nats', 'app.creds') }, tls: { ca: tls('ca.pem') } },
      { servers: ['nats://a:4222'], auth: { token: 'tk' } },
    ]);
    expect(p.subscriptions.map((s) => s.servers)).toEqual([['nats://a:4222', 'nats://b:4222'], ['nats://a:4222']]);
  });

  test('two ways to log in, a user without a password, a cert without its key and a missing file are refused with the line', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA);
    write(tmp, 'ca.pem', 'x');
    const cases: [string, RegExp][] = [
      ['{nats: nats://a:4222, user: u, password: p, token: t}', /sluice\.yml:4:\d+: user and token are two ways to log in/],
      ['{nats: nats://a:4222, user: u}', /sluice\.yml:4:\d+: user needs a password\. Add password: \$\{NATS_PASSWORD\}/],
      ['{nats: nats://a:4222, password: p}', /sluice\.yml:4:\d+: password needs the user/],
      ['{nats: nats://a:4222, tls: {ca: ca.pem, cert: ca.pem}}', /sluice\.yml:4:\d+: a client certificate needs both cert and its key/],
      ['{nats: nats://a:4222, tls: {ca: no-ca.pem}}', /sluice\.yml:4:\d+: the CA file no-ca\.pem does not exist/],
      ['{nats: nats://a:4222, creds: no.creds}', /sluice\.yml:4:\d+: the credentials file no\.creds does not exist/],
      ['{nats: nats://a:4222, pasword: p}', /sluice\.yml:4:\d+: sources\[0\]\.publish has no key "pasword"/],
      // A value that names no server (before, run retried "Cannot connect to NATS at  (connection refused)" for ever).
      ['{nats: ","}', /sluice\.yml:4:\d+: sources\[0\]\.publish\.nats: names no server/],
      ['{nats: [nats://a:4222, " "]}', /sluice\.yml:4:\d+: sources\[0\]\.publish\.nats(\.1)?: names no server/],
    ];
    for (const [publish, message] of cases) {
      const file = write(tmp, 'sluice.yml', `sources:\n  - path: app.db\n    capture: [issues]\n    publish: ${publish}\n`);
      const before = fs.readdirSync(tmp).sort();
      const err = await loadPipeline(file, {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, publish).toBeInstanceOf(SluiceError);
      expect((err as SluiceError).code).toBe('PIPELINE_INVALID');
      expect((err as SluiceError).message, publish).toMatch(message);
      expect(fs.readdirSync(tmp).sort()).toEqual(before);
    }
  });
});
