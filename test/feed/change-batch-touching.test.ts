// a batch marks the events that may change the columns asked for, read in SQL or decoded, with integer and blob masks alike
import { test, expect } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { journalBatch, decodedBatch, type ChangeBatch, readEventsInRange, readSourceView } from '../../src/feed/index.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { emptyWorkTables } from '../../src/sqlite/index.ts';

/*
 * Issue 22, item 3: ChangeBatch.readingOnly, what the applier hands a
 * projection that reads only some columns: every event, each marked by
 * whether it may change them (the others are checked, not written). On a
 * narrow table (integer masks) and a 70-column one (blob masks), the
 * journal read in SQL (sync), the journal decoded page by page, and the
 * same events decoded as an export carries them (import) mark the same
 * events as writing: every insert and
 * delete, updates of a wanted column (a key change when the key is wanted,
 * as a projection's read set always has it), and updates journaled without
 * a mask; the batch's range is the same.
 */

const WIDE = 70;
const wideCols = Array.from({ length: WIDE - 1 }, (_, i) => `c${i + 1}`);

/** The seqs of `b`'s events that write (not only checked), as its relation says in SQL and as its pages say; every event is still there. */
function kept(db: Db, b: ChangeBatch): { sql: number[]; pages: number[] } {
  const r = b.relation();
  const sql = (
    db
      .prepare(`SELECT seq FROM (${r.sql}) e WHERE ${r.writes('e')} ORDER BY seq`)
      .pluck()
      .all(r.params) as bigint[]
  ).map(Number);
  const all = Number(db.prepare(`SELECT count(*) FROM (${r.sql})`).pluck().get(r.params));
  const events = [...b.pages(3)].flat();
  expect([all, events.length]).toEqual([b.toSeq - b.fromSeq, b.toSeq - b.fromSeq]);
  const pages = events.filter((e) => b.writes(e)).map((e) => e.seq);
  // As the applier does after each batch: a decoded batch's relation is a work table.
  emptyWorkTables(db);
  return { sql, pages };
}

function batches(db: Db, table: string, lo: number, hi: number): ChangeBatch[] {
  const t = readSourceView(db).tables.get(table)?.table;
  if (t === undefined) throw new Error('not captured');
  return [journalBatch(db, t, lo, hi), decodedBatch(db, table, t.columns, readEventsInRange(db, [t], lo, hi), lo, hi)];
}

for (const wide of [false, true]) {
  test(`${wide ? `a ${WIDE}-column table (blob masks)` : 'a narrow table (integer masks)'}: journal and decoded batches mark as writing inserts, deletes, unknown masks and updates of a wanted column (the key's included)`, ({
    makeDb,
  }) => {
    const cols = wide ? wideCols : ['title', 'n', 'note'];
    const [a, b, c] = wide ? ['c1', 'c67', 'c68'] : ['title', 'n', 'note'];
    const { db } = makeDb('src.db', `CREATE TABLE t (id INTEGER PRIMARY KEY, ${cols.map((x) => `${x} TEXT`).join(', ')})`);
    db.exec(`INSERT INTO t (id) VALUES (1), (2), (3)`);
    enable(db, ['t']);
    const lo = readSourceView(db).hw;
    const writes = [
      `UPDATE t SET ${b} = 'x' WHERE id = 1`, // lo+1: b only
      `UPDATE t SET ${a} = 'y' WHERE id = 1`, // lo+2: a
      `UPDATE t SET ${b} = 'z', ${c} = 'z' WHERE id = 2`, // lo+3: b and c
      `INSERT INTO t (id) VALUES (4)`, // lo+4
      `UPDATE t SET id = 5 WHERE id = 3`, // lo+5: the key
      `DELETE FROM t WHERE id = 2`, // lo+6
      `UPDATE t SET ${c} = 'w' WHERE id = 1`, // lo+7: c only, journaled without a mask below
      `UPDATE t SET ${a} = 'v', ${b} = 'v' WHERE id = 4`, // lo+8: a and b
    ];
    for (const w of writes) db.exec(w);
    db.exec(`UPDATE _sluice_journal SET mask = NULL WHERE seq = ${lo + 7}`);
    const hi = readSourceView(db).hw;
    expect(hi - lo).toBe(8);
    const expected = [2, 4, 6, 7, 8].map((x) => lo + x);
    for (const [i, batch] of batches(db, 't', lo, hi).entries()) {
      const label = i === 0 ? 'journal' : 'decoded';
      expect(kept(db, batch), label).toEqual({
        sql: [...Array(8).keys()].map((x) => lo + 1 + x),
        pages: [...Array(8).keys()].map((x) => lo + 1 + x),
      });
      const only = batch.readingOnly([a.toUpperCase()]);
      expect(kept(db, only), label).toEqual({ sql: expected, pages: expected });
      expect([only.fromSeq, only.toSeq, only.lastTs()], label).toEqual([lo, hi, batch.lastTs()]);
      expect(kept(db, only.after(lo + 5)), label).toEqual({ sql: expected.slice(2), pages: expected.slice(2) });
      // Wanting c too keeps the update of b and c; a name the table does not have keeps every event.
      expect(kept(db, batch.readingOnly([a, c])).sql, label).toEqual([2, 3, 4, 6, 7, 8].map((x) => lo + x));
      expect(kept(db, batch.readingOnly(['nope'])).sql.length, label).toBe(8);
      // The key (which a projection always reads): inserts, deletes, the key change and the unknown mask.
      expect(kept(db, batch.readingOnly(['id'])).sql, label).toEqual([4, 5, 6, 7].map((x) => lo + x));
    }
  });
}
