import { hash } from 'node:crypto';
import { JOURNAL_TABLE, MASK_COLUMN, journalColumn } from './schema.ts';

/*
 * The digest of a journal event that a cursor anchors on (feed/anchor.ts):
 * its seq, table, op, clock and first image columns, as stored bytes with
 * their storage class. Here, below the feed, because `disable` of a table
 * keeps it: the table's events become tombstones that hold it, so that a
 * reader of another table whose cursor anchors on one of them still finds
 * the event it saw (see TOMBSTONE_OP).
 *
 * The columns hashed are c0..c3 whatever the journal's width: the journal
 * grows by ADD COLUMN, and a row reads NULL in columns added after it, so a
 * fixed set hashes the same row the same way before and after.
 */
const ANCHOR_COLUMNS = 4;

/**
 * The `op` of a tombstone: a journal row of a table taken out of capture
 * (disable), its images gone, its `tid` TOMBSTONE_TID (no table's: a table
 * enabled later may get the old tid, and its exclusion changes rewrite the
 * rows of its tid) and its `mask` the digest it had as an event, which the
 * anchor of a cursor reads in place of the event's own. No reader reads it
 * as an event: readers read the rows of captured tables' tids only.
 */
export const TOMBSTONE_OP = 0;
export const TOMBSTONE_TID = -1;

/** The SQL expression of an event's digested body (the columns above, as text), for a journal `width` columns wide. */
export function anchorBodySql(width: number): string {
  const cells = Array.from({ length: ANCHOR_COLUMNS }, (_, i) =>
    i < width ? `typeof(${journalColumn(i)}) || ':' || hex(${journalColumn(i)})` : "'null:'",
  );
  return `tid || ',' || op || ',' || hex(ts) || ',' || ${cells.join(" || ',' || ")}`;
}

/**
 * The statement that reads the anchor of a cursor at `?`: the newest row at
 * or below it, its body and, for a tombstone, its kept digest (`tomb`;
 * a journal without a mask column, format 2 not upgraded, has none).
 */
export function anchorRowSql(width: number, masked: boolean): string {
  const tomb = masked ? `CASE WHEN op = ${TOMBSTONE_OP} THEN ${MASK_COLUMN} END` : 'NULL';
  return `SELECT seq, ${anchorBodySql(width)} AS body, ${tomb} AS tomb FROM main.${JOURNAL_TABLE} WHERE seq <= ? ORDER BY seq DESC LIMIT 1`;
}

/** The digest of the event at `seq` whose body (anchorBodySql) is `body`. */
export function anchorDigest(seq: bigint | number, body: string): string {
  return hash('sha256', `${seq}|${body}`, 'hex').slice(0, 16);
}
