import { connect } from '@nats-io/transport-node';
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
import { withoutCredentials } from '../apply/target/fed-by.ts';

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
  const creds = /(?:^|,|\/\/)([^/@,]*)@/.exec(url)?.[1];
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

/** Connects to the broker at `url`; `Broker.url` and every message name it without credentials. */
export async function openBroker(url: string, who: string, log: Log = () => {}): Promise<Broker> {
  let nc: NatsConnection;
  const options = natsServerOptions(url);
  url = options.servers;
  try {
    nc = await connect({ ...options, name: `sluice ${who}`, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 5000 });
  } catch (err) {
    throw new InvalidInputError(
      'BROKER_UNREACHABLE',
      `Cannot connect to NATS at ${url} (${(err as Error).message}). Start nats-server with JetStream (nats-server -js), check the user and password in the URL (nats://USER:PASSWORD@HOST:PORT) when it requires them, or pass its URL with --nats.`,
      { cause: err },
    );
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

/** The stream's info, or undefined if there is none. */
export async function streamInfo(b: Broker, stream: string): Promise<StreamInfo | undefined> {
  try {
    return await b.jsm.streams.info(stream);
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return undefined;
    throw err;
  }
}

/** The stream a publisher writes to: made if missing (file storage, limits retention), refused if it does not take the source's subjects. */
export async function ensureStream(b: Broker, stream: string, sourceId: string): Promise<StreamInfo> {
  const subjects = subjectsOf(sourceId);
  const info = await streamInfo(b, stream);
  if (info === undefined) {
    return b.jsm.streams.add({ name: stream, subjects: [subjects.all], storage: 'file' as never, allow_direct: true });
  }
  checkSubjects(info, stream, subjects);
  return info;
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
  if (have.includes(subjects.all) || have.includes('>') || have.includes('sluice.>')) return;
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
