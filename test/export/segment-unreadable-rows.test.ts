// a segment whose checks pass but whose rows SQLite cannot read (an overflow chain broken, its digest made again) is refused naming it, never with a bare SQLITE_CORRUPT
import path from 'node:path';
import { test, expect, describe, failure } from '../support/fixtures.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { readBatch } from '../../src/feed/index.ts';
import { checkSegment, checkSegmentBytes, SegmentWriter } from '../../src/export/index.ts';
import { importChecked } from './support/segment-files.ts';
import { brokenOverflow } from './support/broken-overflow.ts';
import { SluiceError } from '../../src/errors.ts';
import { dumpTables } from '../cli/support/cli.ts';

/*
 * The digest is no seal: anyone can edit a segment and write its digest
 * again. The checks read counts, types and masks, not every value: a long
 * TEXT in an insert's image, or in a snapshot row, lies in overflow pages
 * they never follow. With the first overflow page's link pointed past the
 * end, the segment passes its checks, and SQLite fails only when the value
 * is read. That read must be refused as the segment's (its name, a reason
 * code), nothing committed, whether it comes in memory (a broker's
 * message) or, for a snapshot's rows, from its file.
 */

function source(makeDb: (name?: string, schema?: string) => { db: Db; file: string }): Db {
  const { db } = makeDb('app.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
  enable(db, ['t']);
  return db;
}

async function imported(target: string, c: ReturnType<typeof checkSegment>): Promise<void> {
  await importChecked(target, c);
}

function refusedNaming(err: unknown, label: string): void {
  expect(err).toBeInstanceOf(SluiceError);
  expect((err as SluiceError).code).toBe('IMPORT_SEGMENT_TRUNCATED');
  expect((err as Error).message).toContain(label);
}

/** A target imported from a segment of the source's snapshot; then the segment of an insert of a long TEXT, broken (brokenOverflow). */
async function syncedThenBroken(
  tmp: string,
  makeDb: (name?: string, schema?: string) => { db: Db; file: string },
): Promise<{ target: string; events: { file: string; bytes: Buffer } }> {
  const db = source(makeDb);
  db.prepare('INSERT INTO t VALUES (1, ?)').run('a');
  const sw = new SegmentWriter(db, 'src-1', null);
  const snap = sw.addSnapshot(undefined);
  const target = path.join(tmp, 'target.db');
  await imported(target, checkSegmentBytes('message 1', sw.finishInMemory().data));
  db.prepare('INSERT INTO t VALUES (2, ?)').run('x'.repeat(20_000));
  const w = new SegmentWriter(db, 'src-1', null);
  w.addBatch(readBatch(db, snap.cursor, { limit: 1000 }));
  return { target, events: brokenOverflow(tmp, w.finishInMemory().data, 'events') };
}

describe('a segment that passes its checks but cannot be read', () => {
  test("an event's value in a broken overflow chain, read in memory", async ({ tmp, makeDb }) => {
    const { target, events } = await syncedThenBroken(tmp, makeDb);
    expect(events.bytes.length).toBeLessThanOrEqual(64 * 1024);
    const before = dumpTables(target);
    const c = checkSegmentBytes('stream s message 2', events.bytes);
    refusedNaming(await failure(() => imported(target, c)), 'stream s message 2');
    expect(c.image?.open).toBe(false);
    expect(dumpTables(target)).toEqual(before);
  });

  test("an event's value in a broken overflow chain, from its file (attached and applied in SQL)", async ({ tmp, makeDb }) => {
    const { target, events } = await syncedThenBroken(tmp, makeDb);
    const before = dumpTables(target);
    refusedNaming(await failure(() => imported(target, checkSegment(events.file))), events.file);
    expect(dumpTables(target)).toEqual(before);
  });

  test("a snapshot row's value in a broken overflow chain, in memory and from its file", async ({ tmp, makeDb }) => {
    const db = source(makeDb);
    db.prepare('INSERT INTO t VALUES (1, ?)').run('y'.repeat(20_000));
    const sw = new SegmentWriter(db, 'src-1', null);
    sw.addSnapshot(undefined);
    const { file, bytes } = brokenOverflow(tmp, sw.finishInMemory().data, 'snapshot');
    refusedNaming(
      await failure(() => imported(path.join(tmp, 'memory.db'), checkSegmentBytes('stream s message 3', bytes))),
      'stream s message 3',
    );
    refusedNaming(await failure(() => imported(path.join(tmp, 'file.db'), checkSegment(file))), file);
  });
});
