// a stream whose limits cannot hold a snapshot, or that is full with discard new, is refused with BROKER_STREAM_LIMITS
import fs from 'node:fs';
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager, type StreamConfig } from '@nats-io/jetstream';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, expectOneLineError, exportByLibrary } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from './support/broker.ts';
import { defaultStreamName, subjectsOf } from '../../src/broker/index.ts';

/*
 * docs/broker.md invites making the stream beforehand to set limits such as
 * max_msgs. One whose limits are smaller than one snapshot of the source
 * dropped each snapshot's first part as its last went in: publish exited 0,
 * and every subscriber then failed with BROKER_NO_SNAPSHOT, whose fix
 * (publish again) cannot help. With discard new, the full stream's refusal
 * was an INTERNAL error. publish now checks the stream's limits against the
 * snapshot before it sends any of it, and names a full stream's limits:
 * BROKER_STREAM_LIMITS, exit 1.
 */

const nats = natsForFile();

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(int(sys.argv[2])):
    con.execute("UPDATE labels SET color = color || x'01' WHERE rowid = ?", (1 + i % 5,))
    con.commit()
`;

/** A source of labels and its stream, made beforehand with `limits`. */
async function sourceWithStream(dir: string, name: string, limits: Partial<StreamConfig>): Promise<{ src: string; stream: string }> {
  const src = trackerSource(path.join(dir, `${name}.db`), ['labels']);
  const sid = sourceIdOf(src);
  const stream = defaultStreamName(sid);
  const nc = await connect({ servers: nats.server().url });
  try {
    await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: [subjectsOf(sid).all], ...limits });
  } finally {
    await nc.close();
  }
  return { src, stream };
}

/** How many messages stream `stream` holds. */
async function storedMessages(stream: string): Promise<number> {
  const nc = await connect({ servers: nats.server().url });
  try {
    return (await (await jetstreamManager(nc)).streams.info(stream)).state.messages;
  } finally {
    await nc.close();
  }
}

describe('a stream made with limits', () => {
  test('max_msgs or max_bytes smaller than one snapshot: publish refuses before sending it, naming the stream and the limit', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      for (const [name, limits, words] of [
        ['msgs', { max_msgs: 1 }, /holds at most max_msgs 1, but one snapshot of the source is 2 messages/],
        ['bytes', { max_bytes: 200 }, /holds at most max_bytes 200, but one snapshot of the source is more than \d+ bytes/],
      ] as const) {
        const { src, stream } = await sourceWithStream(dir, name, limits);
        const r = await runCliAsync(['publish', src, '--nats', url]);
        expect(r.status, r.stderr).toBe(1);
        expectOneLineError(r, 'BROKER_STREAM_LIMITS');
        expect(r.stderr).toContain(`Stream ${stream} `);
        expect(r.stderr).toMatch(words);
        expect(r.stderr).toContain(`nats stream edit ${stream}`);
        expect(await storedMessages(stream)).toBe(0);
      }
    } finally {
      removeDir(dir);
    }
  });

  test('limits a snapshot of lines fits but its stored messages do not: publish finds the snapshot dropped at once and says so', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      // A fresh source has no events: its export is its snapshot's lines, the bytes publish counts before it sends.
      const probe = trackerSource(path.join(dir, 'probe.db'), ['labels']);
      exportByLibrary(probe, path.join(dir, 'probe.jsonl'));
      const lines = fs.statSync(path.join(dir, 'probe.jsonl')).size;
      // The stream counts each message's subject and headers too: a snapshot whose lines are just under max_bytes is over it.
      const { src, stream } = await sourceWithStream(dir, 'tight', { max_bytes: lines + 10 });
      const r = await runCliAsync(['publish', src, '--nats', url]);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `sluice: BROKER_STREAM_LIMITS: Stream ${stream} dropped the snapshot just published \\(2 messages, ${lines} bytes of lines, from stream seq 1\\) at once`,
        ),
      );
      expect(r.stderr).toContain(`Its limits (max_bytes ${lines + 10}, discard old) do not hold a snapshot of the source`);
    } finally {
      removeDir(dir);
    }
  });

  test('max_msgs_per_subject: publish refuses it before publishing anything, and when it is set on a stream it publishes to', async () => {
    // Every batch goes on one subject and the snapshot on others: the limit dropped old batches behind the kept snapshot,
    // whose stream first_seq never moved, so no new snapshot was published and every new subscriber stopped at the hole.
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const { src, stream } = await sourceWithStream(dir, 'persubject', { max_msgs_per_subject: 3 });
      const r = await runCliAsync(['publish', src, '--nats', url]);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'BROKER_STREAM_LIMITS');
      expect(r.stderr).toContain(`Stream ${stream} has max_msgs_per_subject 3`);
      expect(r.stderr).toContain(`nats stream edit ${stream} --max-msgs-per-subject=-1`);
      expect(await storedMessages(stream)).toBe(0);

      // Set on a stream publish already publishes to.
      const later = await sourceWithStream(dir, 'edited', {});
      const first = await runCliAsync(['publish', later.src, '--nats', url]);
      expect(first.status, first.stderr).toBe(0);
      const nc = await connect({ servers: url });
      try {
        const jsm = await jetstreamManager(nc);
        const { config } = await jsm.streams.info(later.stream);
        await jsm.streams.update(later.stream, { ...config, max_msgs_per_subject: 5 });
      } finally {
        await nc.close();
      }
      runPython(WRITER, [later.src, '3']);
      const again = await runCliAsync(['publish', later.src, '--nats', url]);
      expect(again.status, again.stderr).toBe(1);
      expectOneLineError(again, 'BROKER_STREAM_LIMITS');
      expect(again.stderr).toContain(`Stream ${later.stream} has max_msgs_per_subject 5`);
    } finally {
      removeDir(dir);
    }
  });

  test('discard new, full: publish names the stream and its limits instead of an INTERNAL error', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const { src, stream } = await sourceWithStream(dir, 'full', { max_msgs: 4, discard: 'new' as StreamConfig['discard'] });
      const first = await runCliAsync(['publish', src, '--nats', url]);
      expect(first.status, first.stderr).toBe(0);
      runPython(WRITER, [src, '10']);
      const r = await runCliAsync(['publish', src, '--nats', url, '--batch', '1']);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'BROKER_STREAM_LIMITS');
      expect(r.stderr).toContain(`Stream ${stream} refused a message: maximum messages exceeded (its limits: max_msgs 4, discard new)`);
    } finally {
      removeDir(dir);
    }
  });
});
