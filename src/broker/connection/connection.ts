import { splitServers, withoutCredentials } from '../../apply/target/index.ts';

export { splitServers };

/*
 * How to reach a NATS deployment (docs/broker.md, "Connecting"): its
 * servers (several for a cluster: the client tries the next one when one
 * does not answer), how to log in, and TLS. The same object comes from the
 * CLI's --nats* flags and from a pipeline file's `publish` and `subscribe`
 * entries. It holds secrets (a password, a token): nothing of it but
 * `label` may be printed or stored; a target records only `label` (fed-by).
 */

/** How to log in: a `.creds` file (a user JWT and its nkey seed), a user and password, or a token. */
export type NatsAuth = { readonly creds: string } | { readonly user: string; readonly password: string } | { readonly token: string };

/** TLS files: the CA that signed the server's certificate (else the system's), and a client certificate and key when the server verifies clients. */
export interface NatsTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

export interface NatsConnection {
  /** Server URLs (`nats://host:4222`, `tls://host:4222`). A URL may still carry `user:password@` (which `ps` shows: prefer `auth`). */
  readonly servers: readonly string[];
  readonly auth?: NatsAuth | undefined;
  readonly tls?: NatsTls | undefined;
}

/** A connection given as a URL (or a comma list of them) alone, as before, or as a NatsConnection. */
export type NatsTarget = string | NatsConnection;

/** The NatsConnection of a URL string, or `c` itself. */
export function natsConnection(c: NatsTarget): NatsConnection {
  return typeof c === 'string' ? { servers: splitServers(c) } : c;
}

/**
 * The servers of a connection as they may be printed and stored: without
 * any user, password or token a URL carries, comma separated.
 *
 * @example
 * connectionLabel({ servers: ['nats://u:p@a:4222', 'nats://b:4222'] }) // 'nats://a:4222,nats://b:4222'
 */
export function connectionLabel(c: NatsTarget): string {
  return natsConnection(c).servers.map(withoutCredentials).join(',');
}

/** How a connection logs in, in words for an error message (never the secret): `as user sluice`. */
export function authWords(auth: NatsAuth | undefined): string {
  if (auth === undefined) return 'without credentials';
  if ('creds' in auth) return `with the credentials file ${auth.creds}`;
  if ('user' in auth) return `as user ${auth.user}`;
  return 'with a token';
}
