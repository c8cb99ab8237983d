// a damaged target found while an attached segment's batch applies is not blamed on the segment
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, failure } from '../support/fixtures.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { readBatch } from '../../src/feed/index.ts';
import { checkSegment, checkSegmentBytes, importStream, segmentItems, SegmentWriter } from '../../src/export/index.ts';
import { importChecked } from './support/segment-files.ts';

/*
 * attachedUnreadable (segment-read.ts) turns an SQLITE_CORRUPT raised while
 * an attached segment's batch applies into the segment's refusal
 * (IMPORT_SEGMENT_TRUNCATED, naming its file) when the segment fails its
 * quick_check. Here the segment is sound and the target's table is
 * damaged: the error must not name the segment.
 */

async function damagedTargetAndSegment(
  tmp: string,
  makeDb: (name?: string, schema?: string) => { db: Db; file: string },
): Promise<{ target: string; file: string }> {
  const { db } = makeDb('app.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
  enable(db, ['t']);
  const ins = db.prepare('INSERT INTO t VALUES (?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= 5000; i++) ins.run(i, `row ${i} `.repeat(5));
  })();
  const sw = new SegmentWriter(db, 'src-1', null);
  const snap = sw.addSnapshot(undefined);
  const target = path.join(tmp, 'target.db');
  await importChecked(target, checkSegmentBytes('message 1', sw.finishInMemory().data));
  db.prepare("UPDATE t SET body = 'changed'").run();
  const w = new SegmentWriter(db, 'src-1', null);
  w.addBatch(readBatch(db, snap.cursor, { limit: 100_000 }));
  const file = path.join(tmp, 'events.segment');
  fs.writeFileSync(file, w.finishInMemory().data);
  expect(fs.statSync(file).size).toBeGreaterThan(64 * 1024);

  // Damage the target's table t: the header of every other leaf page of it overwritten.
  const t = openDatabase(target, { readonly: true });
  let leaves: number[];
  let size: number;
  try {
    leaves = (t.prepare("SELECT pageno FROM dbstat WHERE name = 't' AND pagetype = 'leaf' ORDER BY pageno").pluck().all() as number[]).map(
      Number,
    );
    size = Number(t.pragma('page_size', { simple: true }));
    t.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    t.close();
  }
  expect(leaves.length).toBeGreaterThan(4);
  const bytes = fs.readFileSync(target);
  for (const p of leaves.filter((_, i) => i % 2 === 1)) bytes.fill(0xff, (p - 1) * size, (p - 1) * size + 12);
  fs.writeFileSync(target, bytes);

  return { target, file };
}

test('a target whose table pages are damaged fails the import without blaming the sound segment it was importing', async ({
  tmp,
  makeDb,
}) => {
  const { target, file } = await damagedTargetAndSegment(tmp, makeDb);
  const err = await failure(() => importChecked(target, checkSegment(file)));
  expect((err as { code?: unknown }).code).toBe('SQLITE_CORRUPT'); // the target's, as SQLite raised it
  expect(String((err as Error).message)).not.toContain(file);
}, 60_000);

test('nor when the sound segment file was removed once attached (a spool cleaner): its quick_check cannot open it, and that is no proof of its damage', async ({
  tmp,
  makeDb,
}) => {
  const { target, file } = await damagedTargetAndSegment(tmp, makeDb);
  const c = checkSegment(file);
  const err = await failure(() =>
    importStream(target, {
      label: c.file,
      size: () => c.size,
      encoding: c.meta.encoding,
      atHand: true,
      read: (o) => {
        const items = segmentItems(c, o);
        const next = items.next.bind(items);
        // Removed once the import has attached it (its first item read): the attached file reads on.
        items.next = async (...a) => {
          const r = await next(...a);
          fs.rmSync(file, { force: true });
          return r;
        };
        return items;
      },
    }),
  );
  expect({ code: (err as { code?: unknown }).code, namesSegment: String((err as Error).message).includes(file) }).toEqual({
    code: 'SQLITE_CORRUPT',
    namesSegment: false,
  });
}, 60_000);
