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
import { InvalidInputError } from '../errors.ts';
import { subjectsOf, type SourceSubjects } from './subjects.ts';

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

export async function openBroker(url: string, who: string, log: Log = () => {}): Promise<Broker> {
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: url, name: `sluice ${who}`, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 5000 });
  } catch (err) {
    throw new InvalidInputError(
      'BROKER_UNREACHABLE',
      `Cannot connect to NATS at ${url} (${(err as Error).message}). Start nats-server with JetStream (nats-server -js), or pass its URL with --nats.`,
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
  if (err instanceof JetStreamApiError) return false;
  const e = err as { name?: unknown; message?: unknown; code?: unknown };
  const text = `${String(e?.name)} ${String(e?.message)} ${String(e?.code)}`;
  return /timeout|timed out|no responders|disconnect|closed|connection|reconnect|ECONNREFUSED|ECONNRESET|503/i.test(text);
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
