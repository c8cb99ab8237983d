// a publisher that adds the segment format later publishes a snapshot its segment batches start from: a new segment subscriber ends as sync does
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, runCliAsync, parseJson, dumpTables, syncByLibrary } from '../cli/support/cli.ts';
import { connect, headers } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { natsForFile, publishOnce, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName, subjectsOf } from '../../src/broker/index.ts';

/*
 * Published as JSONL (its snapshot at seq 0, then the batch (0,2]), then
 * with `--format jsonl,segment` from seq 2 on. The stream's only snapshot
 * was at seq 0 and its first segment batch starts at seq 2: a new segment
 * subscriber started from that snapshot and met batch (2,3] with nothing of
 * seq 1-2 in its format: BATCH_GAP, exit 3, run after run (each rebuilding
 * from the same snapshot, SUBSCRIBER_BEHIND_STREAM), while publish exited 0
 * each time. Now the publisher, finding a format's batches start after the
 * stream's last snapshot, publishes a snapshot they start from
 * (STREAM_FORMAT_ADDED), leaving its position (and so every follower of
 * the other formats) where it was.
 */

const nats = natsForFile();
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });
const cli = (args: readonly string[]) => runCliAsync(args);

/** A source with one captured table t of one row, in `dir`, and where a sync of it goes. */
async function capturedSource(dir: string): Promise<{ url: string; src: string; synced: string; sid: string }> {
  const src = path.join(dir, 'src.db');
  sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a');");
  expect((await cli(['enable', src, 't'])).status).toBe(0);
  return { url: nats.server().url, src, synced: path.join(dir, 'synced.db'), sid: sourceIdOf(src) };
}

describe('a publisher that adds the segment format later', () => {
  test('publishes a snapshot its segment batches start from, once; a new segment subscriber and the JSONL one end as sync', async () => {
    const dir = makeDir();
    try {
      const { url, src, synced, sid } = await capturedSource(dir);
      await publishOnce(src, url); // the snapshot at seq 0
      sqlite3(src, "INSERT INTO t VALUES(2,'b'); INSERT INTO t VALUES(3,'c');");
      await publishOnce(src, url); // JSONL (0,2]
      const jsonl = path.join(dir, 'jsonl.db');
      expect((await cli(['subscribe', jsonl, '--nats', url, '--source', sid])).status).toBe(0);
      sqlite3(src, "INSERT INTO t VALUES(4,'d');");
      const both = ['publish', src, '--nats', url, '--format', 'jsonl,segment', '--json'];
      const added = await cli(both);
      expect(added.status, added.stderr).toBe(0);
      expect(parseJson(added, S.publishOutput)).toMatchObject({ batches: 1, snapshots: [{ seq: 3, reason: 'STREAM_FORMAT_ADDED' }] });
      expect(added.stderr).toMatch(/snapshot at seq 3 .*STREAM_FORMAT_ADDED/);
      const again = await cli(both);
      expect(again.status, again.stderr).toBe(0);
      expect(parseJson(again, S.publishOutput)).toMatchObject({ batches: 0, snapshots: [] });

      expect(await syncByLibrary(src, synced)).toBe(0);
      const segment = path.join(dir, 'segment.db');
      for (let run = 0; run < 2; run++) {
        const r = await cli(['subscribe', segment, '--nats', url, '--source', sid, '--format', 'segment', '--json']);
        expect(r.status, r.stderr).toBe(0);
        expect(parseJson(r, S.subscribeOutput).rebuilt).toBeUndefined();
        expect(dumpTables(segment)).toEqual(dumpTables(synced));
      }
      // The JSONL subscriber, at seq 2, goes on from its cursor past the snapshot.
      const j = await cli(['subscribe', jsonl, '--nats', url, '--source', sid, '--json']);
      expect(j.status, j.stderr).toBe(0);
      expect(parseJson(j, S.subscribeOutput)).toMatchObject({ started: 'batch', batchesApplied: 1 });
      expect(dumpTables(jsonl)).toEqual(dumpTables(synced));

      // Both go on with what is published in both formats since.
      sqlite3(src, "INSERT INTO t VALUES(5,'e'); UPDATE t SET v='B' WHERE id=2;");
      expect((await cli(both)).status).toBe(0);
      expect(await syncByLibrary(src, synced)).toBe(0);
      for (const [target, format] of [
        [segment, 'segment'],
        [jsonl, 'jsonl'],
      ] as const) {
        const r = await cli(['subscribe', target, '--nats', url, '--source', sid, '--format', format]);
        expect(r.status, r.stderr).toBe(0);
        expect(dumpTables(target)).toEqual(dumpTables(synced));
      }
    } finally {
      removeDir(dir);
    }
  });

  test("a stream filled by a publisher that published no such snapshot: the segment subscriber's BATCH_GAP says what to do, and publish repairs it", async () => {
    const dir = makeDir();
    try {
      const { url, src, synced, sid } = await capturedSource(dir);
      await publishOnce(src, url);
      sqlite3(src, "INSERT INTO t VALUES(2,'b'); INSERT INTO t VALUES(3,'c');");
      await publishOnce(src, url);
      sqlite3(src, "INSERT INTO t VALUES(4,'d');");
      const both = ['publish', src, '--nats', url, '--format', 'jsonl,segment', '--json'];
      expect((await cli(both)).status).toBe(0);
      // As an older publisher left it: the stream made again with its messages but the snapshot published for the format.
      const stream = defaultStreamName(sid);
      const msgs = await streamMessages(url, stream);
      const added = msgs
        .filter((m) => m.subject === subjectsOf(sid).end)
        .at(-1)
        ?.header.get('Sluice-Snapshot');
      const nc = await connect({ servers: url });
      try {
        const jsm = await jetstreamManager(nc);
        const { config } = await jsm.streams.info(stream);
        await jsm.streams.delete(stream);
        await jsm.streams.add({ name: stream, subjects: config.subjects, storage: config.storage });
        for (const m of msgs) {
          if (m.header.get('Sluice-Snapshot') === added) continue;
          const h = headers();
          for (const k of m.header.keys()) h.set(k, m.header.get(k));
          await jetstream(nc).publish(m.subject, m.data, { headers: h });
        }
      } finally {
        await nc.close();
      }
      const segment = path.join(dir, 'segment.db');
      const gap = await cli(['subscribe', segment, '--nats', url, '--source', sid, '--format', 'segment']);
      expect(gap.status, gap.stderr).toBe(3);
      expect(gap.stderr).toMatch(
        /BATCH_GAP: .*Run sluice subscribe again.*publish on the source with --format segment among its formats.*STREAM_FORMAT_ADDED/s,
      );
      const repaired = await cli(both);
      expect(repaired.status, repaired.stderr).toBe(0);
      expect(parseJson(repaired, S.publishOutput)).toMatchObject({ batches: 0, snapshots: [{ seq: 3, reason: 'STREAM_FORMAT_ADDED' }] });
      const r = await cli(['subscribe', segment, '--nats', url, '--source', sid, '--format', 'segment']);
      expect(r.status, r.stderr).toBe(0);
      expect(await syncByLibrary(src, synced)).toBe(0);
      expect(dumpTables(segment)).toEqual(dumpTables(synced));
    } finally {
      removeDir(dir);
    }
  });
});
