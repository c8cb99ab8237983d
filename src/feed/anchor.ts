import { hash } from 'node:crypto';
import type { Db } from '../sqlite/index.ts';
import { cachedStatement } from '../sqlite/index.ts';
import { JOURNAL_TABLE, journalColumn } from '../capture/index.ts';
import type { Anchor } from './cursor.ts';

/*
 * A cursor's anchor is the newest journal event at or below its seq, and a
 * digest of that event: its seq, table, op, clock and first image columns,
 * as stored bytes with their storage class. An older copy of the file
 * restored in place keeps the inode; once writes push seq past the cursor,
 * seq and file checks pass, but the event at the anchor's seq is another one
 * (another clock, other values), or there is an event where the cursor's
 * history had none.
 *
 * The columns hashed are c0..c3 whatever the journal's width: the journal
 * grows by ADD COLUMN, and a row reads NULL in columns added after it, so a
 * fixed set hashes the same row the same way before and after.
 */
const ANCHOR_COLUMNS = 4;

/** The statement per journal width, made once (a follower reads an anchor twice per source commit). */
const anchorSqls = new Map<number, string>();

function anchorSql(width: number): string {
  const known = anchorSqls.get(width);
  if (known !== undefined) return known;
  const sql = makeAnchorSql(width);
  anchorSqls.set(width, sql);
  return sql;
}

function makeAnchorSql(width: number): string {
  const cells = Array.from({ length: ANCHOR_COLUMNS }, (_, i) =>
    i < width ? `typeof(${journalColumn(i)}) || ':' || hex(${journalColumn(i)})` : "'null:'",
  );
  return `SELECT seq, tid || ',' || op || ',' || hex(ts) || ',' || ${cells.join(" || ',' || ")} AS body FROM main.${JOURNAL_TABLE} WHERE seq <= ? ORDER BY seq DESC LIMIT 1`;
}

/*
 * The digest is a pure function of the event as read: a follower reads the
 * same event twice (the anchor of the cursor it makes, then of the same
 * cursor checked at the next pass; with several projections, the cursors
 * left at rest are checked at each pass), so the digests of the last few
 * events read are kept, keyed by everything hashed. The event itself is read
 * every time. Only short events are kept (an image column may hold a large
 * value, hashed as hex), so the cache stays a few hundred kilobytes at most.
 */
const DIGESTS_KEPT = 64;
const KEPT_EVENT_CHARS = 4096;
const digests = new Map<string, string>();

function digestOf(event: string): string {
  if (event.length > KEPT_EVENT_CHARS) return hash('sha256', event, 'hex').slice(0, 16);
  let d = digests.get(event);
  if (d === undefined) {
    d = hash('sha256', event, 'hex').slice(0, 16);
    if (digests.size >= DIGESTS_KEPT) digests.delete(digests.keys().next().value as string);
    digests.set(event, d);
  }
  return d;
}

/** The anchor of a cursor at `seq` (null when no event at or below it is retained). */
export function anchorAt(db: Db, seq: number, journalWidth: number): Anchor | null {
  const row = cachedStatement(db, anchorSql(journalWidth)).get(seq) as { seq: bigint; body: string } | undefined;
  if (row === undefined) return null;
  return { seq: Number(row.seq), digest: digestOf(`${row.seq}|${row.body}`) };
}
