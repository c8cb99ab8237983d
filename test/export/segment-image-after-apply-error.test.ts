// a segment message's in-memory connection is closed when applying it fails, on a stream that is not at hand (a broker's) too
import path from 'node:path';
import { test, expect, describe, failure } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { readBatch } from '../../src/feed/index.ts';
import { checkSegmentBytes, importStream, segmentItems, SegmentWriter } from '../../src/export/index.ts';

/*
 * The importer returned its reader after an error only for a stream at hand
 * (a file): a broker's reader was left suspended inside the segment's items,
 * so the read-only connection its message was checked on (CheckedSegment
 * .image) stayed open until it was collected. Now a stream's reader is told
 * to stop too, without waiting for it. Here the apply fails (a keys-mode
 * table's events, which a default projection cannot apply: FailClosedError)
 * on a stream as the subscriber passes it (atHand unset).
 */

describe('a segment message whose apply fails', () => {
  test('has its in-memory connection closed (a stream not at hand)', async ({ tmp, makeDb }) => {
    const { db } = makeDb('app.db', 'CREATE TABLE k (id INTEGER PRIMARY KEY, x)');
    db.exec("INSERT INTO k VALUES (1, 'a')");
    enable(db, ['k'], { mode: 'keys' });
    const sw = new SegmentWriter(db, 'src-1', null);
    const snap = sw.addSnapshot(undefined);
    const s = checkSegmentBytes('message 1', sw.finishInMemory().data);
    const target = path.join(tmp, 'target.db');
    await importStream(target, { label: 'message 1', size: () => 1, read: (o) => segmentItems(s, o) });
    db.exec("INSERT INTO k VALUES (2, 'b')");
    const w = new SegmentWriter(db, 'src-1', null);
    w.addBatch(readBatch(db, snap.cursor, { limit: 100 }));
    const c = checkSegmentBytes('message 2', w.finishInMemory().data);
    const err = await failure(() => importStream(target, { label: 'message 2', size: () => 1, read: (o) => segmentItems(c, o) }));
    expect((err as Error).message).toContain('captured in keys mode');
    await new Promise((resolve) => setImmediate(resolve)); // (the stop is not waited for)
    expect(c.image?.open).toBe(false);
  });
});
