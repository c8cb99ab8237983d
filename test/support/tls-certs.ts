import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

/*
 * Certificates for a test's TLS nats-server, made with openssl (Debian's;
 * node's crypto makes keys but no X.509 certificates): a CA of the test's
 * own, a server certificate it signed for 127.0.0.1 and localhost, and a
 * client certificate it signed, for a server that verifies its clients.
 * No system store trusts the CA: a client not given it must refuse the server.
 */

export interface TestCertificates {
  readonly dir: string;
  readonly ca: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  dispose(): void;
}

function openssl(args: readonly string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

export function makeCertificates(): TestCertificates {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-tls-'));
  const key = (name: string) => openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', name], dir);
  key('ca-key.pem');
  openssl(['req', '-x509', '-new', '-key', 'ca-key.pem', '-sha256', '-days', '2', '-subj', '/CN=sluice test CA', '-out', 'ca.pem'], dir);
  const signed = (name: string, cn: string, ext: string) => {
    key(`${name}-key.pem`);
    openssl(['req', '-new', '-key', `${name}-key.pem`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`], dir);
    fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
    openssl(
      ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-days', '2', '-sha256'].concat([
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.pem`,
      ]),
      dir,
    );
  };
  signed('server', 'localhost', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  signed('client', 'sluice client', 'extendedKeyUsage=clientAuth\n');
  const f = (name: string) => path.join(dir, name);
  return {
    dir,
    ca: f('ca.pem'),
    serverCert: f('server.pem'),
    serverKey: f('server-key.pem'),
    clientCert: f('client.pem'),
    clientKey: f('client-key.pem'),
    dispose: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
