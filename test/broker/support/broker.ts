import { afterAll, beforeAll } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager, type StoredMsg } from '@nats-io/jetstream';
import { NatsServer } from '../../support/nats-server.ts';
import { scalar } from '../../cli/support/cli.ts';
import { defaultStreamName, Publisher, type PublishOptions } from '../../../src/broker/index.ts';

/** A real nats-server with JetStream for the file's tests, started before them and stopped after. */
export function natsForFile(): { readonly server: () => NatsServer } {
  let server: NatsServer | undefined;
  beforeAll(async () => {
    server = await NatsServer.start();
  }, 30_000);
  afterAll(async () => {
    await server?.dispose();
  });
  return {
    server: () => {
      if (server === undefined) throw new Error('nats-server not started');
      return server;
    },
  };
}

/**
 * `sluice publish SRC --nats URL [--batch N]` through the library the CLI
 * runs (batchSeqs is --batch), for a test's setup: a CLI run is half a
 * second of start-up; where the CLI's publish is the subject, a test runs it.
 */
export async function publishOnce(src: string, url: string, options: PublishOptions = {}): Promise<void> {
  const p = await Publisher.open(src, url, options);
  try {
    await p.runOnce();
  } finally {
    await p.close();
  }
}

/** The source id of a sluice source. */
export function sourceIdOf(src: string): string {
  return String(scalar(src, 'SELECT source_id FROM main._sluice_state'));
}

/** Every message of a stream, in stream order (read with the manager API, as an operator would). */
export async function streamMessages(url: string, stream: string): Promise<StoredMsg[]> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream);
    const out: StoredMsg[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      if (m !== null) out.push(m);
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** Publishes raw messages to a stream (bad input a test puts on it). */
export async function publishRaw(url: string, subject: string, data: string, headers: Record<string, string> = {}): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    const { jetstream } = await import('@nats-io/jetstream');
    const { headers: mk } = await import('@nats-io/transport-node');
    const h = mk();
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    await jetstream(nc).publish(subject, data, { headers: h });
  } finally {
    await nc.close();
  }
}

export { defaultStreamName };

/** Python, run as `python3 - SRC N`: N updates of comments.body, each committed alone (an application's steady writes). */
export const COMMENT_WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(int(sys.argv[2])):
    con.execute("UPDATE comments SET body = body || '.' WHERE id = ?", (1 + i % 50,))
    con.commit()
`;
