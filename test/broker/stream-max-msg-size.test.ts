// a stream made with max_msg_size: publish cuts its messages to it, and names the stream and the limit for a row too large for it
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import {
  runCliAsync,
  makeDir,
  removeDir,
  trackerSource,
  expectOneLineError,
  parseJson,
  dumpTables,
  syncByLibrary,
} from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName, Publisher, subjectsOf } from '../../src/broker/index.ts';

/*
 * docs/broker.md invites making the stream beforehand to set its limits. One
 * with max_msg_size below a batch message (190 rows of 500 bytes, about
 * 100 KB of JSONL, against 20,000 bytes) was refused by the server, and
 * publish cut its windows to the server's max_payload only: every run failed
 * with "sluice: INTERNAL: message size exceeds maximum allowed", naming no
 * stream, limit or fix. Publish now reads the stream's max_msg_size and cuts
 * every message (headers included) to the smaller of it and max_payload; a
 * single event or snapshot row no message under it can carry is
 * BROKER_STREAM_LIMITS, naming the stream, the limit and the fix.
 */

const nats = natsForFile();

/** Python, `python3 - SRC FROM TO BYTES`: rows FROM..TO of labels with a color of BYTES bytes, in one commit. */
const INSERT = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executemany("INSERT INTO labels (repo_id, name, color) VALUES (1, ?, ?)",
  [('n%d' % i, 'x' * int(sys.argv[4])) for i in range(int(sys.argv[2]), int(sys.argv[3]) + 1)])
con.commit()
`;

/** A source of labels and its stream, made beforehand with max_msg_size `max`. */
async function sourceWithStream(dir: string, name: string, max: number): Promise<{ src: string; sid: string; stream: string }> {
  const src = trackerSource(path.join(dir, `${name}.db`), ['labels']);
  const sid = sourceIdOf(src);
  const stream = defaultStreamName(sid);
  const nc = await connect({ servers: nats.server().url });
  try {
    await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: [subjectsOf(sid).all], max_msg_size: max });
  } finally {
    await nc.close();
  }
  return { src, sid, stream };
}

async function setMaxMsgSize(stream: string, max: number): Promise<void> {
  const nc = await connect({ servers: nats.server().url });
  try {
    const jsm = await jetstreamManager(nc);
    const { config } = await jsm.streams.info(stream);
    await jsm.streams.update(stream, { ...config, max_msg_size: max });
  } finally {
    await nc.close();
  }
}

/** Each stored message's size as the stream counts it against max_msg_size: its headers and its data. */
async function storedSizes(stream: string, subject: string): Promise<number[]> {
  const msgs = await streamMessages(nats.server().url, stream);
  return msgs.filter((m) => m.subject === subject).map((m) => m.data.length + m.header.toString().length);
}

describe('a stream made with max_msg_size', () => {
  test('below a batch message: publish cuts its windows to it, and a subscriber applies them exactly', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      // A segment of one event is five pages of 4 KiB: a stream for segments takes more than 20,000 bytes.
      for (const [name, max, formats] of [
        ['jsonl', 20_000, ['jsonl']],
        ['both', 40_000, ['jsonl', 'segment']],
      ] as const) {
        const { src, sid, stream } = await sourceWithStream(dir, name, max);
        const format = formats.join(',');
        expect((await runCliAsync(['publish', src, '--nats', url, '--format', format])).status).toBe(0);
        runPython(INSERT, [src, '10', '199', '500']);
        const r = await runCliAsync(['publish', src, '--nats', url, '--format', format, '--json']);
        expect(r.status, r.stderr).toBe(0);
        expect(parseJson(r, S.publishOutput).events).toBe(190);
        for (const f of formats) {
          const sizes = await storedSizes(stream, subjectsOf(sid, f).batch);
          expect(sizes.length).toBeGreaterThan(2);
          for (const n of sizes) expect(n).toBeLessThanOrEqual(max);
        }
        const synced = path.join(dir, `${name}-synced.db`);
        expect(await syncByLibrary(src, synced)).toBe(0);
        for (const f of formats) {
          const tgt = path.join(dir, `${name}-${f}.db`);
          const s = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sid, '--format', f]);
          expect(s.status, s.stderr).toBe(0);
          expect(dumpTables(tgt, ['labels'])).toEqual(dumpTables(synced, ['labels']));
        }
      }
    } finally {
      removeDir(dir);
    }
  });

  test('lowered under a running publisher: its next pass cuts to the new limit', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const { src, sid, stream } = await sourceWithStream(dir, 'lowered', 200_000);
      const p = await Publisher.open(src, url);
      try {
        await p.runOnce();
        await setMaxMsgSize(stream, 20_000);
        runPython(INSERT, [src, '10', '199', '500']);
        const pass = await p.runOnce();
        expect(pass.events).toBe(190);
      } finally {
        await p.close();
      }
      for (const n of await storedSizes(stream, subjectsOf(sid, 'jsonl').batch)) expect(n).toBeLessThanOrEqual(20_000);
    } finally {
      removeDir(dir);
    }
  });

  test('below one event or snapshot row: BROKER_STREAM_LIMITS names the stream, the limit and the fix', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      // An event: the snapshot went out before the row was written.
      const ev = await sourceWithStream(dir, 'event', 20_000);
      expect((await runCliAsync(['publish', ev.src, '--nats', url])).status).toBe(0);
      runPython(INSERT, [ev.src, '10', '10', '30000']);
      const r = await runCliAsync(['publish', ev.src, '--nats', url]);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'BROKER_STREAM_LIMITS');
      expect(r.stderr).toContain(`Stream ${ev.stream} `);
      expect(r.stderr).toContain('max_msg_size 20000');
      expect(r.stderr).toMatch(/the event at seq \d+ alone is \d+ bytes of a message/);
      expect(r.stderr).toContain(`nats stream edit ${ev.stream} --max-msg-size`);

      // A snapshot row: a source whose first snapshot holds it.
      const row = await sourceWithStream(dir, 'row', 20_000);
      runPython(INSERT, [row.src, '10', '10', '30000']);
      const s = await runCliAsync(['publish', row.src, '--nats', url]);
      expect(s.status, s.stderr).toBe(1);
      expectOneLineError(s, 'BROKER_STREAM_LIMITS');
      expect(s.stderr).toContain(`Stream ${row.stream} `);
      expect(s.stderr).toContain('max_msg_size 20000');
      expect(s.stderr).toMatch(/a snapshot row alone is \d+ bytes of a message/);
    } finally {
      removeDir(dir);
    }
  });
});
