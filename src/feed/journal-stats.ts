import type { Db } from '../sqlite/index.ts';
import { cachedStatement } from '../sqlite/index.ts';
import { JOURNAL_TABLE, julianToMs } from '../capture/index.ts';

/*
 * What health reads of the journal, without its layout: the last seq
 * written, and one table's backlog after a seq.
 */

/** The highest seq in the journal (0 when it is empty; pruned_through may be higher). */
export function lastJournalSeq(db: Db): number {
  return Number((cachedStatement(db, `SELECT max(seq) FROM main.${JOURNAL_TABLE}`, 'pluck').get() as bigint | null) ?? 0n);
}

/** Wall-clock ms of table `tid`'s first event after `seq`, or undefined when there is none. */
export function firstEventMsAfter(db: Db, tid: number, seq: number): number | undefined {
  const ts = cachedStatement(db, `SELECT ts FROM main.${JOURNAL_TABLE} WHERE seq > ? AND tid = ? ORDER BY seq LIMIT 1`, 'pluck').get(
    seq,
    tid,
  ) as number | undefined;
  return ts === undefined ? undefined : julianToMs(ts);
}

/** How many events of table `tid` the journal holds after `seq`. */
export function eventsAfter(db: Db, tid: number, seq: number): number {
  return Number(
    cachedStatement(db, `SELECT count(*) FROM main.${JOURNAL_TABLE} WHERE seq > ? AND tid = ?`, 'pluck').get(seq, tid) as bigint,
  );
}

/** Whether table `tid` has events in (lo, hi]; any after `lo` without `hi`. */
export function hasEventsBetween(db: Db, tid: number, lo: number, hi?: number): boolean {
  return hi === undefined
    ? cachedStatement(db, `SELECT 1 FROM main.${JOURNAL_TABLE} WHERE seq > ? AND tid = ? LIMIT 1`).get(lo, tid) !== undefined
    : cachedStatement(db, `SELECT 1 FROM main.${JOURNAL_TABLE} WHERE seq > ? AND seq <= ? AND tid = ? LIMIT 1`).get(lo, hi, tid) !==
        undefined;
}
