// a subscriber behind the streams retention rebuilds from the republished snapshot
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, dumpTables, scalar, sourceSeq } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName, subjectsOf, subscribe } from '../../src/broker/index.ts';

/*
 * A stream that keeps only its last 12 messages: once the batches after a
 * target's cursor have left it, subscribe cannot continue that target and
 * rebuilds it from the published snapshot (SUBSCRIBER_BEHIND_STREAM). The
 * publisher republishes the snapshot once retention no longer reaches back
 * to it (SNAPSHOT_PAST_RETENTION), so a subscriber always has one; one that
 * is not behind just continues.
 */

const nats = natsForFile();

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(int(sys.argv[2])):
    con.execute("UPDATE labels SET color = color || x'01' WHERE rowid = ?", (1 + i % 5,))
    con.commit()
`;

/** The stream's retention: it keeps at most this many messages (a count, not a time). */
const MAX_MSGS = 12;

describe('retention', () => {
  test('the publisher republishes the snapshot, and a target behind the stream rebuilds from it with a reason code', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = trackerSource(path.join(dir, 'app.db'), ['labels']);
      const sid = sourceIdOf(src);
      const stream = defaultStreamName(sid);
      const nc = await connect({ servers: url });
      await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: [subjectsOf(sid).all], max_msgs: MAX_MSGS });
      await nc.close();

      const first = await runCliAsync(['publish', src, '--nats', url, '--batch', '5', '--json']);
      expect(first.status, first.stderr).toBe(0);
      const snap0 = parseJson(first, S.publishOutput).snapshots[0];
      expect(snap0).toMatchObject({ seq: 0, reason: 'STREAM_HAD_NO_SNAPSHOT' });
      const behind = path.join(dir, 'behind.db');
      const keeping = path.join(dir, 'keeping.db');
      // The setup's subscribes and publishes go through the library (as the CLI runs them).
      for (const t of [behind, keeping]) expect((await subscribe(t, url, { sourceId: sid })).started).toBe('snapshot');

      // 30 events in windows of 5 seqs; the keeping target follows after each 5.
      for (let i = 0; i < 6; i++) {
        runPython(WRITER, [src, '5']);
        await publishOnce(src, url, { batchSeqs: 5 });
        expect((await subscribe(keeping, url, { sourceId: sid })).started).toBe('batch');
      }
      runPython(WRITER, [src, '50']);
      const last = await runCliAsync(['publish', src, '--nats', url, '--batch', '5', '--json']);
      expect(last.status, last.stderr).toBe(0);
      const out = parseJson(last, S.publishOutput);
      expect(out.batches).toBe(10);
      expect(out.snapshots).toEqual([
        { seq: sourceSeq(src), rows: Number(scalar(src, 'SELECT count(*) FROM labels')), reason: 'SNAPSHOT_PAST_RETENTION' },
      ]);
      expect(last.stderr).toContain('SNAPSHOT_PAST_RETENTION');

      const msgs = await streamMessages(url, stream);
      // The broker dropped the oldest messages to keep its retention, so the first batch left starts at seq 30.
      expect(msgs.length).toBe(MAX_MSGS);
      const firstBatchFrom = Number(msgs.find((m) => m.subject === subjectsOf(sid).batch)?.header.get('Sluice-From-Seq'));
      expect(firstBatchFrom).toBe(30);

      // The target at seq 30 is just within the stream: it continues with batches.
      const kept = await runCliAsync(['subscribe', keeping, '--nats', url, '--source', sid, '--json']);
      expect(kept.status, kept.stderr).toBe(0);
      const k = parseJson(kept, S.subscribeOutput);
      expect(k).toMatchObject({ started: 'batch', batchesApplied: 10 });
      expect(k.rebuilt).toBeUndefined();
      expect(dumpTables(keeping)).toEqual(dumpTables(src, ['labels']));

      // The target at seq 0 is behind the stream, whose first batch starts after 0.
      const r = await runCliAsync(['subscribe', behind, '--nats', url, '--source', sid, '--json']);
      expect(r.status, r.stderr).toBe(0);
      const rep = parseJson(r, S.subscribeOutput);
      expect(rep).toMatchObject({ started: 'snapshot', rebuilt: { reason: 'SUBSCRIBER_BEHIND_STREAM', targetSeq: 0, snapshotSeq: 80 } });
      expect(r.stderr).toContain('SUBSCRIBER_BEHIND_STREAM');
      expect(dumpTables(behind)).toEqual(dumpTables(src, ['labels']));
      expect(scalar(behind, 'SELECT seq FROM main._sluice_projections')).toBe(80n);

      // More events: the rebuilt target continues from the snapshot with the batches after it.
      runPython(WRITER, [src, '7']);
      expect((await runCliAsync(['publish', src, '--nats', url, '--batch', '5'])).status).toBe(0);
      for (const t of [behind, keeping]) {
        const again = await runCliAsync(['subscribe', t, '--nats', url, '--source', sid, '--json']);
        expect(again.status, again.stderr).toBe(0);
        expect(dumpTables(t)).toEqual(dumpTables(src, ['labels']));
      }
    } finally {
      removeDir(dir);
    }
  }, 120_000);
});
