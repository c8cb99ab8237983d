import { createHash } from 'node:crypto';
import { nkeys } from '@nats-io/transport-node';

/*
 * A NATS operator, an account with JetStream and a user of it, as nsc makes
 * them (decentralized auth: JWTs signed with nkeys), for a test's
 * nats-server in operator mode (`resolver: MEMORY`), and the user's
 * `.creds` file. Made here with the nkeys the NATS client ships, so the
 * tests need no nsc.
 */

type KeyPair = ReturnType<typeof nkeys.createOperator>;

function b64url(data: Uint8Array | string): string {
  return Buffer.from(data).toString('base64url');
}

/** A JWT with `claims`, issued (signed) by `issuer` for `subject`. */
function jwt(issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>): string {
  const header = b64url(JSON.stringify({ typ: 'JWT', alg: 'ed25519-nkey' }));
  const body: Record<string, unknown> = { iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey(), name, sub: subject, nats };
  body.jti = createHash('sha256').update(JSON.stringify(body)).digest('base64url');
  const payload = b64url(JSON.stringify(body));
  return `${header}.${payload}.${b64url(issuer.sign(Buffer.from(`${header}.${payload}`)))}`;
}

const UNLIMITED = { subs: -1, data: -1, payload: -1 };

export interface OperatorSetup {
  /** The server's configuration: the operator, and the account preloaded in a memory resolver. */
  readonly config: string;
  /** A `.creds` file's text for a user of the account. */
  readonly creds: string;
}

export function operatorSetup(): OperatorSetup {
  const operator = nkeys.createOperator();
  const account = nkeys.createAccount();
  // JetStream in operator mode needs a system account.
  const system = nkeys.createAccount();
  const user = nkeys.createUser();
  const opJwt = jwt(operator, operator.getPublicKey(), 'test-operator', { type: 'operator', version: 2 });
  const accJwt = jwt(operator, account.getPublicKey(), 'APP', {
    limits: {
      ...UNLIMITED,
      imports: -1,
      exports: -1,
      wildcards: true,
      conn: -1,
      leaf: -1,
      mem_storage: -1,
      disk_storage: -1,
      streams: -1,
      consumer: -1,
    },
    default_permissions: { pub: {}, sub: {} },
    type: 'account',
    version: 2,
  });
  const sysJwt = jwt(operator, system.getPublicKey(), 'SYS', {
    limits: { ...UNLIMITED, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 },
    type: 'account',
    version: 2,
  });
  const userJwt = jwt(account, user.getPublicKey(), 'sluice', { pub: {}, sub: {}, ...UNLIMITED, type: 'user', version: 2 });
  return {
    config: `operator: ${opJwt}\nsystem_account: ${system.getPublicKey()}\nresolver: MEMORY\nresolver_preload: {\n  ${account.getPublicKey()}: ${accJwt}\n  ${system.getPublicKey()}: ${sysJwt}\n}\n`,
    creds: `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${new TextDecoder().decode(user.getSeed())}\n------END USER NKEY SEED------\n`,
  };
}
