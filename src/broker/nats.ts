import fs from 'node:fs';
import { AuthorizationError, connect, credsAuthenticator, UserAuthenticationExpiredError } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type StoredMsg,
  type StreamInfo,
} from '@nats-io/jetstream';
import { errorCode, errorMessage, InvalidInputError } from '../errors.ts';
import { subjectsOf, type SourceSubjects } from './subjects.ts';
import { urlLogin, withoutCredentials } from '../apply/target/index.ts';
import {
  authWords,
  closingStrays,
  natsConnection,
  splitServers,
  type NatsAuth,
  type NatsTarget,
  type NatsTls,
} from './connection/index.ts';

/*
 * The connection to a NATS server with JetStream: it reconnects by itself
 * for ever (a broker restarted under a follower is waited for, not an
 * error), saying so in one log line when it loses and regains the server.
 */

export interface Broker {
  readonly url: string;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Payload bytes the server accepts in one message. */
  readonly maxPayload: number;
  close(): Promise<void>;
}

export type Log = (line: string) => void;

/**
 * The client's options for `url`: its servers without credentials, and the
 * user and password (`nats://user:pass@host`) or token (`nats://token@host`)
 * of the first server that has them, which the client does not read from a
 * URL itself (it would connect without them: "Authorization Violation").
 */
export function natsServerOptions(url: string): { servers: string; user?: string; pass?: string; token?: string } {
  const creds = urlLogin(url);
  const servers = withoutCredentials(url);
  if (creds === undefined) return { servers };
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  const colon = creds.indexOf(':');
  return colon < 0
    ? { servers, token: decode(creds) }
    : { servers, user: decode(creds.slice(0, colon)), pass: decode(creds.slice(colon + 1)) };
}

/**
 * Connects to the broker `to` (a URL, a comma list of URLs, or a
 * NatsConnection with its login and TLS files); `Broker.url` and every
 * message name its servers without credentials. A refused login is
 * BROKER_AUTH_FAILED, a failed TLS handshake or a TLS file that cannot be
 * read BROKER_TLS_FAILED, a server that does not answer BROKER_UNREACHABLE.
 */
export async function openBroker(to: NatsTarget, who: string, log: Log = () => {}): Promise<Broker> {
  let nc: NatsConnection;
  const c = natsConnection(to);
  const fromUrl = natsServerOptions(c.servers.join(','));
  const url = fromUrl.servers;
  // Credentials in a URL, as before (ps shows them): used when none are given otherwise.
  const auth: NatsAuth | undefined =
    c.auth ??
    (fromUrl.user !== undefined
      ? { user: fromUrl.user, password: fromUrl.pass ?? '' }
      : fromUrl.token !== undefined
        ? { token: fromUrl.token }
        : undefined);
  const options = { servers: splitServers(url), ...(auth === undefined ? {} : loginOptions(auth, url)), ...tlsOptions(c.tls, url) };
  try {
    nc = await closingStrays(() =>
      connect({ ...options, name: `sluice ${who}`, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 5000 }),
    );
  } catch (err) {
    throw connectError(err, url, auth, c.tls, c.auth === undefined ? urlSecret(fromUrl) : undefined);
  }
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect')
        log(`sluice ${who}: lost the connection to NATS at ${url}; reconnecting (nothing unacknowledged is lost)`);
      else if (s.type === 'reconnect') log(`sluice ${who}: reconnected to NATS at ${url}; resuming`);
    }
  })().catch(() => {});
  let jsm: JetStreamManager;
  try {
    jsm = await jetstreamManager(nc);
  } catch (err) {
    await nc.close();
    throw new InvalidInputError(
      'BROKER_NO_JETSTREAM',
      `NATS at ${url} has no JetStream (${(err as Error).message}). Run nats-server with -js (and a store directory, -sd DIR).`,
      { cause: err },
    );
  }
  return {
    url,
    nc,
    js: jetstream(nc),
    jsm,
    maxPayload: nc.info?.max_payload ?? 1024 * 1024,
    close: async () => {
      if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
    },
  };
}

/** The password or token of a URL's login (natsServerOptions), as written and decoded; undefined when it has none. */
function urlSecret(o: ReturnType<typeof natsServerOptions>): string | undefined {
  return o.pass ?? o.token;
}

/**
 * `text` without any piece of `secret` (a password or token from the URL)
 * three characters or longer, as written or percent-encoded: a URL split
 * where the secret was not meant to be split would print its pieces as
 * servers (and the client as host names it could not find).
 */
function redact(text: string, secret: string | undefined): string {
  if (secret === undefined || secret === '') return text;
  const pieces = new Set([secret, encodeURIComponent(secret), ...secret.split(/[,@:/]+/)].filter((p) => p.length >= 3));
  let out = text;
  for (const p of [...pieces].sort((a, b) => b.length - a.length)) out = out.split(p).join('***');
  return out;
}

/** The stream's info, or undefined if there is none. */
export async function streamInfo(b: Broker, stream: string): Promise<StreamInfo | undefined> {
  try {
    return await b.jsm.streams.info(stream);
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return undefined;
    throw err;
  }
}

/** The subjects sluice gives a source's stream (`sluice.<token>.>`, subjects.ts). */
const SOURCE_SUBJECTS = /^sluice\.[A-Za-z0-9_=-]+\.>$/;

/**
 * The stream a publisher writes to: made if missing (file storage, limits
 * retention), refused if it does not take the source's subjects. A stream
 * sluice made for other source ids only (every subject `sluice.<id>.>`) gets
 * this source's subjects added: a source whose capture was enabled again has
 * a new id, and publishes on into the stream named with --stream, where its
 * subscribers rebuild from its snapshot (SOURCE_CHANGED).
 */
export async function ensureStream(b: Broker, stream: string, sourceId: string, log: Log = () => {}): Promise<StreamInfo> {
  const subjects = subjectsOf(sourceId);
  const info = await streamInfo(b, stream);
  if (info === undefined) {
    try {
      return await b.jsm.streams.add({ name: stream, subjects: [subjects.all], storage: 'file' as never, allow_direct: true });
    } catch (err) {
      throw await subjectsTaken(b, stream, subjects, err);
    }
  }
  const have = info.config.subjects ?? [];
  if (!takesSubjects(have, subjects) && have.length > 0 && have.every((s) => SOURCE_SUBJECTS.test(s))) {
    const updated = await b.jsm.streams.update(stream, { subjects: [...have, subjects.all] });
    log(
      `sluice publish: added the subjects of source ${sourceId} (${subjects.all}) to stream ${stream} on NATS at ${b.url}, which took ${have.join(', ')}: a source whose capture was enabled again has a new id; its subscribers rebuild from its snapshot (SOURCE_CHANGED)`,
    );
    return updated;
  }
  checkSubjects(info, stream, subjects);
  return info;
}

/**
 * The error of a stream that could not be made: when another stream takes
 * the source's subjects already (the source published before under another
 * --stream), BROKER_SUBJECTS_TAKEN naming it; otherwise `err` as it was.
 */
async function subjectsTaken(b: Broker, stream: string, subjects: SourceSubjects, err: unknown): Promise<unknown> {
  if (!/subjects overlap/i.test(String((err as Error | undefined)?.message))) return err;
  const holder = await b.jsm.streams.find(subjects.all).catch(() => undefined);
  return new InvalidInputError(
    'BROKER_SUBJECTS_TAKEN',
    `NATS at ${b.url}: stream ${stream} cannot be made for this source's subjects (${subjects.all}): ${holder === undefined ? 'another stream' : `stream ${holder}`} takes them already (the source was published there before). Publish with --stream ${holder ?? 'NAME'} to go on in it, or delete that stream first (nats stream rm ${holder ?? 'NAME'}) to start again in ${stream}.`,
  );
}

function takesSubjects(have: readonly string[], subjects: SourceSubjects): boolean {
  return have.includes(subjects.all) || have.includes('>') || have.includes('sluice.>');
}

/** A subscriber's stream: it must exist and carry the source's subjects. */
export async function requireStream(b: Broker, stream: string, sourceId: string): Promise<StreamInfo> {
  const info = await streamInfo(b, stream);
  if (info === undefined)
    throw new InvalidInputError(
      'BROKER_NO_STREAM',
      `NATS at ${b.url} has no stream ${stream}. Publish the source first (run sluice publish on the source database with --nats ${b.url}), or pass the publisher's --stream.`,
    );
  checkSubjects(info, stream, subjectsOf(sourceId));
  return info;
}

function checkSubjects(info: StreamInfo, stream: string, subjects: SourceSubjects): void {
  const have = info.config.subjects ?? [];
  if (takesSubjects(have, subjects)) return;
  throw new InvalidInputError(
    'BROKER_STREAM_SUBJECTS',
    `Stream ${stream} takes subjects ${JSON.stringify(have)}, not this source's ${subjects.all}. Pass another --stream, or add ${subjects.all} to the stream's subjects.`,
  );
}

/** The stored message at stream sequence `seq` or after it on `subject`, or undefined. */
export async function messageAtOrAfter(b: Broker, stream: string, seq: number, subject: string): Promise<StoredMsg | undefined> {
  const m = await b.jsm.streams.getMessage(stream, { seq, next_by_subj: subject } as never);
  return m ?? undefined;
}

/** The last stored message on `subject`, or undefined. */
export async function lastMessage(b: Broker, stream: string, subject: string): Promise<StoredMsg | undefined> {
  const m = await b.jsm.streams.getMessage(stream, { last_by_subj: subject });
  return m ?? undefined;
}

/**
 * Whether the broker refused a message because the stream's last message on
 * its subject is not the one expected (Nats-Expected-Last-Subject-Sequence,
 * JetStream API error 10071): the stream lost what the publisher had put on
 * the subject (a store restored from an older copy), or something else put
 * a message on it since.
 */
export function isWrongLastSequence(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence;
}

/** Whether an error is the broker being away (a retry after reconnecting may succeed), not a refusal. */
export function isTransient(err: unknown): boolean {
  if (err instanceof JetStreamApiError || isStoreLost(err)) return false;
  const name = (err as { name?: unknown } | null | undefined)?.name;
  const text = `${String(name)} ${String(errorMessage(err))} ${String(errorCode(err))}`;
  return /timeout|timed out|no responders|disconnect|closed|connection|reconnect|ECONNREFUSED|ECONNRESET|503/i.test(text);
}

/**
 * Whether an error says the server does not have what sluice made on it, or
 * has no JetStream answering yet: a stream or consumer not found, or no
 * responder on a JetStream subject ("jetstream is not enabled", which is also
 * what publishing to a subject no stream takes gets). After a server came back
 * on an empty store (or while its JetStream starts), the stream is made again
 * and the call retried, like a lost connection; not a refusal to give up on.
 */
export function isStoreLost(err: unknown): boolean {
  if (err instanceof JetStreamApiError)
    return (
      err.code === JetStreamApiCodes.StreamNotFound ||
      err.code === JetStreamApiCodes.ConsumerNotFound ||
      err.code === JetStreamApiCodes.JetStreamNotEnabledForAccount
    );
  // JetStreamNotEnabled is not exported by the client's public module: known by its name.
  return (err as { name?: unknown } | null)?.name === 'JetStreamNotEnabled';
}

export interface UntilAnsweredOptions {
  /** Who asks, and whom: `sluice publish: NATS at URL`. */
  readonly what: string;
  /** What the server may have lost, for the log line: `stream NAME`. */
  readonly lost: string;
  /** What goes on once it answers: `publishing`. */
  readonly resumed: string;
  readonly log: Log;
  /** Stops retrying (then undefined). */
  readonly signal: AbortSignal | undefined;
  /** Makes again what the server lost, before the next try after an isStoreLost error. */
  readonly remake: () => Promise<void>;
}

/**
 * Runs `fn` until it does not fail for the broker being away: one log line
 * per outage, and one when it answers again; undefined if stopped first. A
 * server that lost what sluice made on it (isStoreLost: a new, empty store,
 * or JetStream not answering yet) is an outage too, not a refusal: `remake`
 * runs before the next try. Any other error is thrown.
 */
export async function untilAnswered<T>(fn: () => Promise<T>, o: UntilAnsweredOptions): Promise<T | undefined> {
  let said = false;
  let lost = false;
  for (;;) {
    if (o.signal?.aborted === true) return undefined;
    try {
      if (lost) await o.remake();
      lost = false;
      const r = await fn();
      if (said) o.log(`${o.what} answers again; ${o.resumed}`);
      return r;
    } catch (err) {
      const storeLost = isStoreLost(err);
      if (!storeLost && !isTransient(err)) throw err;
      lost ||= storeLost;
      if (!said)
        o.log(
          storeLost
            ? `${o.what} does not have ${o.lost} or its JetStream does not answer (${(err as Error).message}); making it again and retrying`
            : `${o.what} does not answer (${(err as Error).message}); retrying`,
        );
      said = true;
      await pause(250, o.signal);
    }
  }
}

/** Sleeps `ms`, or less if `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done);
  });
}

/** The client's login options for `auth`; a credentials file that cannot be read is BROKER_AUTH_FAILED. */
function loginOptions(auth: NatsAuth, url: string): Record<string, unknown> {
  if ('user' in auth) return { user: auth.user, pass: auth.password };
  if ('token' in auth) return { token: auth.token };
  let creds: Buffer;
  try {
    creds = fs.readFileSync(auth.creds);
  } catch (err) {
    throw new InvalidInputError(
      'BROKER_AUTH_FAILED',
      `Cannot log in to NATS at ${url}: the credentials file ${auth.creds} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}). Pass the .creds file of a user of the account (nsc generate creds, or your operator gives it) with --nats-creds, or creds: in sluice.yml.`,
      { cause: err },
    );
  }
  const authenticator = credsAuthenticator(new Uint8Array(creds));
  try {
    // The client parses the file only as it connects, and its error ("unable to parse credentials") read as a server that does not answer.
    authenticator('sluice');
  } catch (err) {
    throw new InvalidInputError(
      'BROKER_AUTH_FAILED',
      `Cannot log in to NATS at ${url}: the credentials file ${auth.creds} cannot be used (${err instanceof Error && /parse/.test(err.message) ? err.message : 'its nkey seed is not one'}): a .creds file holds a user JWT and its nkey seed, each between its BEGIN and END lines. Pass the whole .creds file of a user of the account (nsc generate creds, or your operator gives it) with --nats-creds, or creds: in sluice.yml.`,
      { cause: err },
    );
  }
  return { authenticator };
}

/** The client's TLS options: each file must be readable, and a client certificate comes with its key. */
function tlsOptions(tls: NatsTls | undefined, url: string): { tls?: Record<string, string> } {
  if (tls === undefined || (tls.ca === undefined && tls.cert === undefined && tls.key === undefined)) return {};
  if ((tls.cert === undefined) !== (tls.key === undefined))
    throw new InvalidInputError(
      'BROKER_TLS_FAILED',
      `Cannot connect to NATS at ${url} with a client certificate: ${tls.cert === undefined ? `the key ${tls.key} is given without its certificate` : `the certificate ${tls.cert} is given without its key`}. Pass both (--nats-tls-cert and --nats-tls-key, or tls: {cert, key} in sluice.yml).`,
    );
  const out: Record<string, string> = {};
  for (const [what, file, key] of [
    ['CA file', tls.ca, 'caFile'],
    ['client certificate', tls.cert, 'certFile'],
    ['client key', tls.key, 'keyFile'],
  ] as const) {
    if (file === undefined) continue;
    try {
      fs.accessSync(file, fs.constants.R_OK);
    } catch (err) {
      throw new InvalidInputError(
        'BROKER_TLS_FAILED',
        `Cannot connect to NATS at ${url} over TLS: the ${what} ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}). Correct the path (relative paths in sluice.yml are relative to the file).`,
        { cause: err },
      );
    }
    out[key] = file;
  }
  return { tls: out };
}

/** Node's codes for a server certificate it does not trust, or a handshake that failed. */
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_|CERT_|HOSTNAME_MISMATCH|ERR_OSSL_)/;

/** One line for a connection that failed: who refused what, and what to fix. */
function connectError(
  err: unknown,
  given: string,
  auth: NatsAuth | undefined,
  tls: NatsTls | undefined,
  /** The password or token the URL carried (the login used), to be kept out of the message. */
  secret?: string,
): InvalidInputError {
  const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } } | null;
  const oneLine = (t: unknown) => String(t).replace(/\s+/g, ' ').trim();
  const why = redact(oneLine(e?.message ?? err), secret);
  const url = redact(given, secret);
  // The servers are split at commas (splitServers): a login in the URL that is not the one meant may be cut at one.
  const comma =
    secret === undefined
      ? ''
      : " The login was read from the URL: write a ',' of its password or token as %2C (and a '%' as %25), or pass the secret with --nats-password-file or --nats-token-file.";
  if (
    err instanceof AuthorizationError ||
    err instanceof UserAuthenticationExpiredError ||
    /authori[sz]ation violation|authentication/i.test(why)
  )
    return new InvalidInputError(
      'BROKER_AUTH_FAILED',
      `NATS at ${url} refused the login ${authWords(auth)} (${why}). ${
        auth === undefined
          ? 'The server requires credentials: pass --nats-creds FILE, --nats-user NAME with --nats-password-file FILE (or SLUICE_NATS_PASSWORD), or --nats-token-file FILE (or SLUICE_NATS_TOKEN).'
          : "Check the credentials against the server's accounts (a wrong password, token or expired .creds), and that the user may use JetStream."
      }${comma}`,
      { cause: err },
    );
  const code = String(e?.code ?? e?.cause?.code ?? '');
  if (TLS_CODES.test(code) || /certificate|tls|ssl/i.test(why)) {
    const fix =
      /UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO/.test(code) || /verify|self.signed/i.test(why)
        ? tls?.ca === undefined
          ? "the server's certificate is signed by a CA this machine does not trust: pass that CA with --nats-tls-ca FILE (tls: {ca: FILE} in sluice.yml)"
          : `the server's certificate is not signed by the CA in ${tls.ca}: pass the CA that signed it`
        : /ALTNAME|HOSTNAME/.test(code)
          ? "the server's certificate does not name the host in the URL: connect with a host name it names"
          : 'check the CA (--nats-tls-ca), the client certificate and key (--nats-tls-cert, --nats-tls-key), and that the server speaks TLS';
    return new InvalidInputError(
      'BROKER_TLS_FAILED',
      `TLS with NATS at ${url} failed (${code === '' ? why : `${code}: ${why}`}): ${fix}.`,
      {
        cause: err,
      },
    );
  }
  // A server that refuses the handshake (a client certificate it does not trust, or none where it verifies clients) closes
  // the connection, and the client only says it timed out: with TLS files given, that is the likely cause.
  if (tls !== undefined && (tls.ca ?? tls.cert ?? tls.key) !== undefined && /timeout|closed|reset|disconnect/i.test(why))
    return new InvalidInputError(
      'BROKER_TLS_FAILED',
      `Cannot connect to NATS at ${url} over TLS (${why}): the server may have refused the TLS handshake. ${
        tls.cert === undefined
          ? 'If it verifies clients (tls { verify: true }), pass a client certificate and key it trusts with --nats-tls-cert and --nats-tls-key (tls: {cert, key} in sluice.yml).'
          : `If it verifies clients (tls { verify: true }), check that the client certificate ${tls.cert} (--nats-tls-cert, with its key ${tls.key ?? '(none)'}, --nats-tls-key) is signed by a CA in the server's ca_file.`
      } Check that ${tls.ca === undefined ? "the system's CAs trust the server's certificate (else pass its CA with --nats-tls-ca)" : `the CA ${tls.ca} (--nats-tls-ca) signed the server's certificate`}, and that the server runs at that address (nats-server -js).`,
      { cause: err },
    );
  return new InvalidInputError(
    'BROKER_UNREACHABLE',
    `Cannot connect to NATS at ${url} (${why}). Start nats-server with JetStream (nats-server -js), or pass the URL of one that runs with --nats (several for a cluster: --nats URL1,URL2).${comma}`,
    { cause: err },
  );
}
