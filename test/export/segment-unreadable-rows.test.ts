// a segment whose checks pass but whose rows SQLite cannot read (an overflow chain broken, its digest made again) is refused naming it, never with a bare SQLITE_CORRUPT
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { test, expect, describe, runPython, failure } from '../support/fixtures.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { readBatch } from '../../src/feed/index.ts';
import { checkSegment, checkSegmentBytes, SegmentWriter } from '../../src/export/index.ts';
import { importChecked } from './support/segment-files.ts';
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

const SET_DIGEST = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE segment SET value = ? WHERE name = 'digest'", (sys.argv[2],))
con.commit()
con.close()
`;

/** `good` with the link of its first linked overflow page pointed past the end, and its digest made again. */
function brokenOverflow(tmp: string, good: Buffer, name: string): { file: string; bytes: Buffer } {
  const file = path.join(tmp, `${name}.segment`);
  fs.writeFileSync(file, good);
  const db = openDatabase(file, { readonly: true });
  let overflow: number[];
  let meta: Set<number>;
  try {
    overflow = db.prepare("SELECT pageno FROM dbstat WHERE pagetype = 'overflow' ORDER BY pageno").pluck().all() as number[];
    meta = new Set((db.prepare("SELECT pageno FROM dbstat WHERE name = 'segment'").pluck().all() as number[]).map(Number));
  } finally {
    db.close();
  }
  const bytes = Buffer.from(good);
  const size = bytes.readUInt16BE(16);
  const page = overflow.map(Number).find((p) => bytes.readUInt32BE((p - 1) * size) !== 0);
  expect(page).toBeDefined();
  bytes.writeUInt32BE(0x7fffff, ((page as number) - 1) * size);
  const h = createHash('sha256');
  for (let p = 2; p <= bytes.length / size; p++) if (!meta.has(p)) h.update(bytes.subarray((p - 1) * size, p * size));
  fs.writeFileSync(file, bytes);
  runPython(SET_DIGEST, [file, h.digest('hex')]);
  return { file, bytes: fs.readFileSync(file) };
}

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

describe('a segment that passes its checks but cannot be read', () => {
  test("an event's value in a broken overflow chain, read in memory", async ({ tmp, makeDb }) => {
    const db = source(makeDb);
    db.prepare('INSERT INTO t VALUES (1, ?)').run('a');
    const sw = new SegmentWriter(db, 'src-1', null);
    const snap = sw.addSnapshot(undefined);
    const target = path.join(tmp, 'target.db');
    await imported(target, checkSegmentBytes('message 1', sw.finishInMemory().data));
    db.prepare('INSERT INTO t VALUES (2, ?)').run('x'.repeat(20_000));
    const w = new SegmentWriter(db, 'src-1', null);
    w.addBatch(readBatch(db, snap.cursor, { limit: 1000 }));
    const { bytes } = brokenOverflow(tmp, w.finishInMemory().data, 'events');
    expect(bytes.length).toBeLessThanOrEqual(64 * 1024);
    const before = dumpTables(target);
    const c = checkSegmentBytes('stream s message 2', bytes);
    refusedNaming(await failure(() => imported(target, c)), 'stream s message 2');
    expect(c.image?.open).toBe(false);
    expect(dumpTables(target)).toEqual(before);
  });

  test("an event's value in a broken overflow chain, from its file (attached and applied in SQL)", async ({ tmp, makeDb }) => {
    const db = source(makeDb);
    db.prepare('INSERT INTO t VALUES (1, ?)').run('a');
    const sw = new SegmentWriter(db, 'src-1', null);
    const snap = sw.addSnapshot(undefined);
    const target = path.join(tmp, 'target.db');
    await imported(target, checkSegmentBytes('message 1', sw.finishInMemory().data));
    db.prepare('INSERT INTO t VALUES (2, ?)').run('x'.repeat(20_000));
    const w = new SegmentWriter(db, 'src-1', null);
    w.addBatch(readBatch(db, snap.cursor, { limit: 1000 }));
    const { file } = brokenOverflow(tmp, w.finishInMemory().data, 'events');
    const before = dumpTables(target);
    refusedNaming(await failure(() => imported(target, checkSegment(file))), file);
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
