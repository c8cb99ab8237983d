// an imported update line whose changed leaves out a column its images show changed, or names one the table lacks, is read by its images
import { test, expect } from '../support/fixtures.ts';
import { decodedBatch, type ChangeEvent } from '../../src/feed/index.ts';
import { emptyWorkTables } from '../../src/sqlite/index.ts';

/*
 * Issue 22, item 3. An export line's `changed` is what import skips by: an
 * update none of whose changed columns a projection reads is not written.
 * A line is a file anyone can write (or damage), and its full images say
 * what the write changed: one whose `changed` leaves `title` out while its
 * before- and after-image differ in `title` must still be written to a
 * projection of `title`, or the target keeps the old title and nothing
 * notices until that row changes again. A name the table lacks changes
 * none of its columns, and does not fail the batch.
 */

const COLUMNS = ['id', 'title', 'n'];
const update = (seq: number, before: string, after: string, changed: string[]): ChangeEvent => ({
  seq,
  table: 't',
  key: [1n],
  ts: 0,
  image: 'full',
  op: 'update',
  before: { id: 1n, title: before, n: BigInt(seq - 1) },
  after: { id: 1n, title: after, n: BigInt(seq) },
  beforeKey: [1n],
  changed,
});

test('a decoded update is marked as writing a projection of title when its images changed title, whatever its changed says', ({
  makeDb,
}) => {
  const { db } = makeDb('t.db', 'CREATE TABLE x (a)');
  const events = [
    update(1, 'a', 'a', ['n']), // n only, truly: checked, not written
    update(2, 'a', 'b', ['n']), // title changed, left out of changed
    update(3, 'b', 'b', ['n', 'nope']), // a name the table lacks
  ];
  const b = decodedBatch(db, 't', COLUMNS, events, 0, 3).readingOnly(['id', 'title']);
  const r = b.relation();
  const sql = (
    db
      .prepare(`SELECT seq FROM (${r.sql}) e WHERE ${r.writes('e')} ORDER BY seq`)
      .pluck()
      .all(r.params) as bigint[]
  ).map(Number);
  const pages = [...b.pages(10)]
    .flat()
    .filter((e) => b.writes(e))
    .map((e) => e.seq);
  emptyWorkTables(db);
  expect({ sql, pages }).toEqual({ sql: [2], pages: [2] });
});
