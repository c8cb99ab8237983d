import type { Db } from '../sqlite/index.ts';
import { anyOf, cachedStatement, foldIdent, sameValue } from '../sqlite/index.ts';
import type { CapturedTable } from '../capture/index.ts';
import { JOURNAL_TABLE, julianToMs, anyChangedSql, maskFor } from '../capture/index.ts';
import { batchEnd, readEventsInRange } from './batch.ts';
import type { ChangeEvent, Row } from './events.ts';
import { decodedEvents, journalEvents, type EventRelation } from './event-relation.ts';

/*
 * The one batch type the applier takes: the events (fromSeq, toSeq] of one
 * source table, from the journal (sync) or decoded from lines (import, a
 * broker). Appliers read it as a relation in SQL or as decoded events, page
 * by page; neither needs to know where it came from.
 */
export interface ChangeBatch {
  readonly table: string;
  readonly fromSeq: number;
  readonly toSeq: number;
  /** The events as a relation on the applier's connection (made on first call). */
  relation(): EventRelation;
  /** The events decoded, in seq order, at most `size` at a time (a large batch never sits in memory whole). */
  pages(size: number): Iterable<readonly ChangeEvent[]>;
  /** Whether the batch holds at most `limit` events. */
  atMost(limit: number): boolean;
  /** How many events the batch holds (the source's events it hands over, whatever they make in a projection). */
  count(): number;
  /** Whether some event has only its key (a keys-mode table). */
  keysOnly(): boolean;
  /** Wall-clock ms of the last event, or null when there is none. */
  lastTs(): number | null;
  /** The part of this batch after `seq` (an overlap with what is applied). */
  after(seq: number): ChangeBatch;
  /** Whether `e`, an event of this batch, may change the rows of the projection it is applied to (readingOnly); true unless marked so. */
  writes(e: ChangeEvent): boolean;
  /**
   * The same events, with each update whose changed columns are all outside
   * `columns` (the table's, by name) marked as one that changes nothing the
   * projection reads (`writes`, and the relation's `writes`): the appliers
   * check it against the target like any event and write nothing for it.
   * Inserts, deletes and updates journaled without their mask (every column
   * changed) are never so marked. A name the table does not have marks
   * none. `signedZero` (some of `columns`): the ones without affinity, which
   * can hold -0.0; the mask sees no change between 0.0 and -0.0
   * (capture/mask.ts), so an update with a real zero in one of them, before
   * or after, is never marked either.
   */
  readingOnly(columns: readonly string[], signedZero?: readonly string[]): ChangeBatch;
}

/** The journal's events of captured table `t` in (lo, hi], read on `db` (the applier's connection, source as main). */
export function journalBatch(db: Db, t: CapturedTable, lo: number, hi: number): ChangeBatch {
  const b: ChangeBatch = {
    table: t.name,
    fromSeq: lo,
    toSeq: hi,
    relation: () => journalEvents(db, t.tid, t.columns.length, lo, hi),
    *pages(size) {
      for (let from = lo; from < hi;) {
        const to = batchEnd(db, t.tid, from, hi, size);
        yield readEventsInRange(db, [t], from, to);
        from = to;
      }
    },
    atMost(limit) {
      if (hi - lo <= limit) return true;
      const sql = `SELECT count(*) FROM (SELECT 1 FROM main.${JOURNAL_TABLE} WHERE tid = ? AND seq > ? AND seq <= ? LIMIT ?)`;
      return Number(cachedStatement(db, sql, 'pluck').get(t.tid, lo, hi, limit + 1)) <= limit;
    },
    count() {
      const sql = `SELECT count(*) FROM main.${JOURNAL_TABLE} WHERE tid = ? AND seq > ? AND seq <= ?`;
      return Number(cachedStatement(db, sql, 'pluck').get(t.tid, lo, hi));
    },
    keysOnly: () => t.mode !== 'images',
    lastTs() {
      const sql = `SELECT ts FROM main.${JOURNAL_TABLE} WHERE tid = ? AND seq > ? AND seq <= ? ORDER BY seq DESC LIMIT 1`;
      const ts = cachedStatement(db, sql, 'pluck').get(t.tid, lo, hi) as number | undefined;
      return ts === undefined ? null : julianToMs(ts);
    },
    after: (seq) => journalBatch(db, t, Math.max(lo, seq), hi),
    writes: () => true,
    readingOnly: (columns, signedZero) => markReads(b, t.columns, columns, signedZero),
  };
  return b;
}

/** Events decoded from lines (all of one table, in seq order, inside (fromSeq, toSeq]); `columns`: the table's columns in order. */
export function decodedBatch(
  db: Db,
  table: string,
  columns: readonly string[],
  lines: readonly ChangeEvent[],
  fromSeq: number,
  toSeq: number,
): ChangeBatch {
  const folded = columns.map(foldIdent);
  const events = lines.map((e) => withCheckedChanged(columns, folded, e));
  const b: ChangeBatch = {
    table,
    fromSeq,
    toSeq,
    relation: () => decodedEvents(db, columns, events),
    *pages(size) {
      for (let i = 0; i < events.length; i += size) yield events.slice(i, i + size);
    },
    atMost: (limit) => events.length <= limit,
    count: () => events.length,
    keysOnly: () => events.some((e) => e.image !== 'full'),
    lastTs: () => events.at(-1)?.ts ?? null,
    after: (seq) =>
      decodedBatch(
        db,
        table,
        columns,
        events.filter((e) => e.seq > seq),
        Math.max(fromSeq, seq),
        toSeq,
      ),
    writes: () => true,
    readingOnly: (wanted, signedZero) => markReads(b, columns, wanted, signedZero),
  };
  return b;
}

/**
 * `e` with its `changed` (an update's, from a line anyone can write) as its
 * images show it: every column of the table whose before- and after-image
 * both hold it and differ by storage class and bytes is in it, and a name
 * the table does not have is not. A projection skips by `changed`, so a
 * line that left a changed column out would otherwise leave that column's
 * old value in the target, unnoticed until the row changes again.
 */
function withCheckedChanged(columns: readonly string[], folded: readonly string[], e: ChangeEvent): ChangeEvent {
  if (e.op !== 'update' || e.changed === undefined) return e;
  const said = new Set(e.changed.map(foldIdent));
  const { before, after } = e;
  const differs = (c: string) =>
    before !== null &&
    after !== null &&
    Object.hasOwn(before, c) &&
    Object.hasOwn(after, c) &&
    !sameValue(before[c] ?? null, after[c] ?? null);
  const changed = columns.filter((c, i) => said.has(folded[i] as string) || differs(c));
  return changed.length === e.changed.length && changed.every((c, i) => c === e.changed?.[i]) ? e : { ...e, changed };
}

/** A REAL 0.0 or -0.0 (integers are bigints): the values whose sign a mask cannot see. */
const isRealZero = (v: unknown) => typeof v === 'number' && v === 0;

/**
 * Whether an event may change one of `wanted` among a table's `columns`:
 * not an update, or an update whose changed columns (unknown: all) include
 * one, or one with a real zero in a column of `signedZero` (its sign may
 * have changed unseen); undefined when a wanted name is not a column (every
 * event may).
 */
function keeps(
  columns: readonly string[],
  wanted: readonly string[],
  signedZero: readonly string[],
): ((e: ChangeEvent) => boolean) | undefined {
  const folded = new Set(columns.map(foldIdent));
  if (![...wanted, ...signedZero].every((c) => folded.has(foldIdent(c)))) return undefined;
  const want = new Set(wanted.map(foldIdent));
  const zeros = new Set(signedZero.map(foldIdent));
  const zeroCols = columns.filter((c) => zeros.has(foldIdent(c)));
  const zeroIn = (row: Row | null) => row !== null && zeroCols.some((c) => isRealZero(row[c]));
  return (e) =>
    e.op !== 'update' || e.changed === undefined || e.changed.some((c) => want.has(foldIdent(c))) || zeroIn(e.before) || zeroIn(e.after);
}

/**
 * `b` (a batch of a table with `columns`) with its events marked by whether they may change one of `wanted` (readingOnly).
 * Exported for batches read in SQL from elsewhere: an attached segment (export/segment-batch.ts).
 */
export function markReads(
  b: ChangeBatch,
  columns: readonly string[],
  wanted: readonly string[],
  signedZero: readonly string[] = [],
): ChangeBatch {
  const keep = keeps(columns, wanted, signedZero);
  if (keep === undefined) return b;
  const readMask = maskFor(columns, wanted);
  const zeros = new Set(signedZero.map(foldIdent));
  const zeroAt = columns.flatMap((c, i) => (zeros.has(foldIdent(c)) ? [i] : []));
  const realZero = (x: string) => `(typeof(${x}) = 'real' AND ${x} = 0)`;
  const marked: ChangeBatch = {
    ...b,
    relation() {
      const r = b.relation();
      // Inserts and deletes have no mask (NULL: every column): they write.
      return {
        ...r,
        writes: (a) =>
          zeroAt.length === 0
            ? anyChangedSql(r.mask(a), readMask)
            : `(${anyChangedSql(r.mask(a), readMask)} OR ${anyOf(zeroAt.flatMap((i) => [realZero(r.before(a, i)), realZero(r.after(a, i))]))})`,
      };
    },
    writes: (e) => b.writes(e) && keep(e),
    after: (seq) => markReads(b.after(seq), columns, wanted, signedZero),
    readingOnly: (more, moreZero) => markReads(marked, columns, more, moreZero),
  };
  return marked;
}
