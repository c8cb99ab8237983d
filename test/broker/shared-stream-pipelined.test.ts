// two sources publishing into one stream at once keep each one's batches contiguous
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, dumpTables, sourceSeq, waitFor, projectionSeq } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';
import { Publisher, subjectsOf, subscribe } from '../../src/broker/index.ts';

/*
 * A publisher has several batches waiting for the broker's ack at once, each
 * after the first telling the broker which message the stream must hold last
 * (the previous batch), so that the broker never stores a batch whose
 * predecessor it lost. On a stream two sources publish into (--stream), the
 * other source's messages come in between: the broker refuses those
 * batches, and the publisher sends them again alone. Each source's batches
 * must stay contiguous, each range once, and a subscriber of each must equal
 * its source.
 */

const nats = natsForFile();
const STREAM = 'SHARED_BY_TWO';

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(int(sys.argv[2])):
    con.execute("UPDATE comments SET body = body || ? WHERE id = ?", (str(i % 10), 1 + i % 50))
    con.commit()
`;

describe('two sources publishing into one stream at once', () => {
  test("each source's batches are contiguous, each range once, and each subscriber equals its source", async () => {
    const dir = makeDir();
    const publishers: Publisher[] = [];
    try {
      const url = nats.server().url;
      const sources = ['a.db', 'b.db'].map((f) => trackerSource(path.join(dir, f), ['comments']));
      // Opened one after the other: the first makes the stream, the second adds its subjects to it.
      for (const src of sources) publishers.push(await Publisher.open(src, url, { stream: STREAM, batchSeqs: 2 }));
      await Promise.all(publishers.map((p) => p.runOnce())); // the snapshots
      for (const src of sources) runPython(WRITER, [src, '400']);
      const passes = await Promise.all(publishers.map((p) => p.runOnce()));
      for (const [i, pass] of passes.entries()) expect(pass.events, `source ${i}`).toBe(400);

      const messages = await streamMessages(url, STREAM);
      for (const src of sources) {
        const id = sourceIdOf(src);
        const batches = messages.filter((m) => m.subject === subjectsOf(id).batch);
        expect(new Set(batches.map((m) => m.header.get('Nats-Msg-Id'))).size).toBe(batches.length);
        const snapshotSeq = Number(messages.find((m) => m.subject === subjectsOf(id).end)?.header.get('Sluice-To-Seq'));
        let prev = snapshotSeq;
        for (const m of batches) {
          expect(Number(m.header.get('Sluice-From-Seq')), `the batch of ${src} after seq ${prev}`).toBe(prev);
          prev = Number(m.header.get('Sluice-To-Seq'));
        }
        expect(prev).toBe(sourceSeq(src));

        // Following, stopped once caught up (a run without --follow stops at its source's last message: shared-stream-one-shot.test.ts).
        const target = `${src}.target.db`;
        const stop = new AbortController();
        const following = subscribe(target, url, { sourceId: id, stream: STREAM, follow: true, signal: stop.signal });
        await waitFor('the subscriber to catch up', () => projectionSeq(target, 'comments') === sourceSeq(src), 60_000);
        stop.abort();
        await following;
        expect(dumpTables(target)).toEqual(dumpTables(src, ['comments']));
      }
    } finally {
      for (const p of publishers) await p.close();
      removeDir(dir);
    }
  }, 120_000);
});
