// a segment message made in memory passes the same checks as its file would, and the connection it is read on is closed whatever stops its reading
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { journalStartCursor, readBatch } from '../../src/feed/index.ts';
import { checkSegment, checkSegmentBytes, readCheckedLines, segmentItems, SegmentWriter } from '../../src/export/index.ts';
import type { Db } from '../../src/sqlite/index.ts';

type CheckedSegment = ReturnType<typeof checkSegmentBytes>;

/*
 * The publisher makes each segment message in memory (serialize) and a
 * subscriber checks one of up to 64 KiB from its bytes, keeping the
 * read-only connection it checked it on open for reading (CheckedSegment
 * .image). Messages of every size the publisher makes (one event, a
 * hundred small ones in pages of 1 KiB, wide rows in overflow pages, a
 * window of deletes) pass checkSegmentBytes, and checkSegment on a file of
 * the same bytes, with a header that counts their pages. Each image is
 * closed once read, and also when reading stops before its first item.
 */

function source(makeDb: (name?: string, schema?: string) => { db: Db; file: string }): { db: Db; cursor: string } {
  const { db } = makeDb('app.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT, n REAL)');
  enable(db, ['t']);
  return { db, cursor: journalStartCursor(db) };
}

/** A window's segment made in memory, as the publisher makes it (segment-message.ts), in pages of `pageSize` (default 4 KiB). */
function message(db: Db, cursor: string, pageSize?: number): Buffer {
  const w = new SegmentWriter(db, 'src-1', null, pageSize === undefined ? {} : { pageSize });
  w.addBatch(readBatch(db, cursor, { limit: 100_000 }));
  return w.finishInMemory().data;
}

function checkedBothWays(tmp: string, data: Buffer, name: string): CheckedSegment {
  const page = data.readUInt16BE(16) === 1 ? 65536 : data.readUInt16BE(16);
  expect(data.readUInt32BE(28) * page).toBe(data.length);
  const file = path.join(tmp, `${name}.segment`);
  fs.writeFileSync(file, data);
  const f = checkSegment(file);
  const m = checkSegmentBytes(`message ${name}`, data);
  expect(m.meta).toEqual(f.meta);
  expect(m.tables).toEqual(f.tables);
  return m;
}

describe('segment messages made in memory', () => {
  test('every size the publisher makes passes the checks a file does', ({ tmp, makeDb }) => {
    const { db, cursor } = source(makeDb);
    db.prepare('INSERT INTO t VALUES (1, ?, 0.5)').run('one');
    const one = message(db, cursor, 1024);
    expect(one.readUInt16BE(16)).toBe(1024);
    checkedBothWays(tmp, one, 'one').image?.close();
    const c1 = journalStartCursor(db);
    for (let i = 2; i <= 101; i++) db.prepare('INSERT INTO t VALUES (?, ?, ?)').run(i, `row ${i}`, i / 3);
    checkedBothWays(tmp, message(db, c1, 1024), 'hundred').image?.close();
    const c2 = journalStartCursor(db);
    for (let i = 200; i < 205; i++) db.prepare('INSERT INTO t VALUES (?, ?, -0.0)').run(i, 'x'.repeat(9000));
    checkedBothWays(tmp, message(db, c2), 'wide').image?.close();
    checkedBothWays(tmp, message(db, c2, 1024), 'wide-small-pages').image?.close();
    const c3 = journalStartCursor(db);
    db.exec('DELETE FROM t');
    checkedBothWays(tmp, message(db, c3, 1024), 'deletes').image?.close();
  });

  test('the image is closed when reading stops before its first item', async ({ tmp, makeDb }) => {
    const { db, cursor } = source(makeDb);
    db.prepare('INSERT INTO t VALUES (1, ?, 0.5)').run('one');
    const c = checkSegmentBytes('message 1', message(db, cursor));
    const { db: target } = makeDb('target.db');
    const items = segmentItems(c, { target });
    await items.return({ lines: 0, incompleteTail: 0 });
    expect(c.image?.open).toBe(false);
    void tmp;
  });

  test('the image is closed when the message is of another source than the stream', async ({ makeDb }) => {
    const { db, cursor } = source(makeDb);
    db.prepare('INSERT INTO t VALUES (1, ?, 0.5)').run('one');
    const data = message(db, cursor);
    const { db: target } = makeDb('target.db');
    const seen: CheckedSegment[] = [];
    const reader = readCheckedLines(
      {
        sourceId: 'another-source',
        where: (n) => `stream s message ${n}`,
        lines: (async function* () {
          yield { segment: 'stream s message 1', data };
        })(),
        segment: (ref, n) => {
          const c = checkSegmentBytes(ref.segment, ref.data as Uint8Array);
          seen.push(c);
          return { sourceId: c.meta.sourceId, items: segmentItems(c, { target }, n) };
        },
      },
      { target },
    );
    await expect(reader.next()).rejects.toMatchObject({ code: 'IMPORT_MIXED_SOURCES' });
    expect(seen.length).toBe(1);
    expect(seen[0]?.image?.open).toBe(false);
  });
});
