import type { Db } from '../sqlite/index.ts';
import { cachedStatement } from '../sqlite/index.ts';
import { anchorDigest, anchorRowSql, journalHasMask } from '../capture/index.ts';
import type { Anchor } from './cursor.ts';

/*
 * A cursor's anchor is the newest journal event at or below its seq, and a
 * digest of that event (capture/anchor-digest.ts): its seq, table, op, clock
 * and first image columns, as stored bytes with their storage class. An
 * older copy of the file restored in place keeps the inode; once writes push
 * seq past the cursor, seq and file checks pass, but the event at the
 * anchor's seq is another one (another clock, other values), or there is an
 * event where the cursor's history had none. An event of a table whose
 * capture was taken off since (disable) is a tombstone that keeps the
 * digest it had, so a cursor that anchors on it still finds it.
 */

/** The statement per journal width and mask column, made once (a follower reads an anchor twice per source commit). */
const anchorSqls = new Map<string, string>();

function anchorSql(width: number, masked: boolean): string {
  const key = `${width}/${masked}`;
  const known = anchorSqls.get(key);
  if (known !== undefined) return known;
  const sql = anchorRowSql(width, masked);
  anchorSqls.set(key, sql);
  return sql;
}

/** The anchor of a cursor at `seq` (null when no event at or below it is retained). */
export function anchorAt(db: Db, seq: number, journalWidth: number): Anchor | null {
  const row = cachedStatement(db, anchorSql(journalWidth, journalHasMask(db))).get(seq) as
    { seq: bigint; body: string; tomb: unknown } | undefined;
  if (row === undefined) return null;
  return { seq: Number(row.seq), digest: typeof row.tomb === 'string' ? row.tomb : anchorDigest(row.seq, row.body) };
}
