// an attached segment refused for a broken overflow chain in a later batch says truly what of it was committed
import path from 'node:path';
import { test, expect, failure } from '../support/fixtures.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { readBatch } from '../../src/feed/index.ts';
import { checkSegment, checkSegmentBytes, SegmentWriter } from '../../src/export/index.ts';
import { importChecked } from './support/segment-files.ts';
import { brokenOverflow } from './support/broken-overflow.ts';
import { SluiceError } from '../../src/errors.ts';
import { scalar } from '../cli/support/cli.ts';

/*
 * attachedUnreadable (segment-read.ts) maps an attached segment's
 * SQLITE_CORRUPT to IMPORT_SEGMENT_TRUNCATED. The importer commits an
 * attached segment's batches in groups (a mirror's: 100,000 events), and an
 * error keeps the groups committed before it (importer.ts: "The batches
 * applied before an error stay applied"). A segment whose first batch fills
 * a group and whose second holds the broken value: the first batch's work
 * stays in the target, and the refusal says so. It used to say "Nothing of
 * it was committed".
 */

test('a refusal after a group of its batches committed says they stay applied, not that nothing of it was committed', async ({
  tmp,
  makeDb,
}) => {
  const { db } = makeDb('app.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)') as { db: Db; file: string };
  enable(db, ['t']);
  db.prepare('INSERT INTO t VALUES (1, ?)').run('a');
  const sw = new SegmentWriter(db, 'src-1', null);
  const snap = sw.addSnapshot(undefined);
  const target = path.join(tmp, 'target.db');
  await importChecked(target, checkSegmentBytes('message 1', sw.finishInMemory().data));
  const ins = db.prepare('INSERT INTO t VALUES (?, ?)');
  db.transaction(() => {
    for (let i = 2; i <= 100_002; i++) ins.run(i, 'b');
  })();
  const first = readBatch(db, snap.cursor, { limit: 1_000_000 });
  db.prepare('INSERT INTO t VALUES (?, ?)').run(200_000, 'x'.repeat(20_000));
  const w = new SegmentWriter(db, 'src-1', null);
  w.addBatch(first);
  w.addBatch(readBatch(db, first.to, { limit: 1000 }));
  const { file } = brokenOverflow(tmp, w.finishInMemory().data, 'events');
  const rowsBefore = Number(scalar(target, 'SELECT count(*) FROM t'));
  const err = await failure(() => importChecked(target, checkSegment(file)));
  expect(err).toBeInstanceOf(SluiceError);
  expect((err as SluiceError).code).toBe('IMPORT_SEGMENT_TRUNCATED');
  const says = (err as Error).message;
  const rowsAfter = Number(scalar(target, 'SELECT count(*) FROM t'));
  // Its first group committed before the broken batch: the refusal says so, not that nothing of it was.
  expect({ saysNothingCommitted: says.includes('Nothing of it was committed'), rowsAdded: rowsAfter - rowsBefore }).toEqual({
    saysNothingCommitted: false,
    rowsAdded: 100_001,
  });
  expect(says).toContain('any batches of it committed before them stay applied');
}, 120_000);
