import { foldIdent, withReadTransaction, cachedStatement } from '../sqlite/index.ts';
import type { Db } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { JOURNAL_TABLE } from '../capture/index.ts';
import { requireValidCursor } from './cursor-check.ts';
import { counterModeTable, cursorToken, readSourceView, resolveTables } from './source-view.ts';
import { JournalDecoder, type ChangeEvent } from './events.ts';
import { columnFilterSql } from './column-filter.ts';

export interface BatchOptions {
  /** Most events in one batch. Default 1000. */
  readonly limit?: number;
  /** Only these tables (a subset of the cursor's tables). Default: the cursor's tables. */
  readonly tables?: readonly string[];
  /**
   * Read no event past this seq (default: the high-water mark): a batch can
   * end at a fixed seq boundary, so one re-read later gets the same range.
   */
  readonly throughSeq?: number;
  /**
   * Only the updates that changed one of these columns (by their
   * changed-column mask), plus every insert, delete and key change: what a
   * reader that re-derives something from these columns needs. Every table
   * read must have every named column. Default: every event.
   */
  readonly columns?: readonly string[];
}

export interface Batch {
  /** The cursor the batch starts after. */
  readonly from: string;
  /** The cursor to continue from: everything up to it has been delivered. */
  readonly to: string;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly sourceId: string;
  /** Ordered by seq, strictly increasing. */
  readonly events: readonly ChangeEvent[];
  /** True when the limit cut the batch short of the high-water mark. */
  readonly hasMore: boolean;
}

const DEFAULT_LIMIT = 1000;

/**
 * Reads the next bounded, ordered batch after `cursor`, in one read
 * transaction: the cursor is validated first, and no event past the
 * high-water mark read in that transaction is returned.
 *
 * @example
 * let cursor = snapshot(db, ['issues'], onRow).cursor;
 * for (;;) {
 *   const b = readBatch(db, cursor, { limit: 500 });
 *   apply(b.events);
 *   cursor = b.to;
 *   if (!b.hasMore) break;
 * }
 */
export function readBatch(db: Db, cursor: string, options: BatchOptions = {}): Batch {
  const limit = options.limit ?? DEFAULT_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new InvalidInputError('BAD_LIMIT', `Batch limit ${limit} must be a whole number >= 1.`);
  return withReadTransaction(db, () => {
    const v = requireValidCursor(db, cursor);
    let tables = v.tables;
    if (options.tables !== undefined && options.tables.length > 0) {
      const wanted = new Set(options.tables.map(foldIdent));
      tables = v.tables.filter((t) => wanted.has(foldIdent(t.name)));
      const missing = options.tables.filter((n) => !v.tables.some((t) => foldIdent(t.name) === foldIdent(n)));
      if (missing.length > 0)
        throw new InvalidInputError(
          'TABLE_NOT_IN_CURSOR',
          `Table(s) ${missing.join(', ')} are not covered by this cursor (it covers ${v.cursor.tables.join(', ')}). Start a new cursor that includes them.`,
        );
    }
    const counter = tables.find((t) => t.mode === 'counter');
    if (counter !== undefined) {
      throw counterModeTable(counter.name);
    }
    const hw = options.throughSeq === undefined ? v.view.hw : Math.max(v.cursor.seq, Math.min(v.view.hw, options.throughSeq));
    const decoder = new JournalDecoder(db, tables);
    const filter = columnFilterSql(db, tables, options.columns);
    // Cached: a follower (publish --follow) reads a batch per commit, and preparing it was a tenth of that.
    const stmt = cachedStatement(
      db,
      `SELECT ${decoder.selectList()} FROM main.${JOURNAL_TABLE} WHERE seq > ? AND seq <= ? AND tid IN (SELECT value FROM json_each(?))${filter} ORDER BY seq LIMIT ?`,
      'raw',
    );
    const rows = stmt.all(v.cursor.seq, hw, JSON.stringify(tables.map((t) => t.tid)), limit) as unknown[][];
    const events = rows.map((r) => decoder.decode(r));
    const hasMore = rows.length === limit && Number(rows[rows.length - 1]?.[0]) < hw;
    const toSeq = hasMore ? Number(rows[rows.length - 1]?.[0]) : hw;
    return {
      from: cursor,
      // The continuation covers exactly the tables read: a subset never skips the others silently.
      to: cursorToken(db, v.view, tables, toSeq),
      fromSeq: v.cursor.seq,
      toSeq,
      sourceId: v.view.state.sourceId,
      events,
      hasMore,
    };
  });
}

/**
 * A cursor at the start of the retained journal that the tables' current
 * arming wrote, for `tables` (default: every captured images/keys table):
 * seq = pruned_through, or the latest arming seq of those tables if later
 * (events before a re-arm may have another mode or shape, and reading them
 * with today's layout would lose keys). Reading from it lists every such
 * event; it is not a snapshot of older rows.
 */
export function journalStartCursor(db: Db, tables?: readonly string[]): string {
  return withReadTransaction(db, () => {
    const view = readSourceView(db);
    const resolved = resolveTables(view, tables);
    return cursorToken(db, view, resolved, Math.max(view.state.prunedThrough, ...resolved.map((t) => t.armedSeq)));
  });
}

/**
 * Decodes the events of `tables` with lo < seq <= hi. The caller must have
 * validated its cursor in the same read transaction (the applier does).
 */
export function readEventsInRange(
  db: Db,
  tables: readonly import('../capture/index.ts').CapturedTable[],
  lo: number,
  hi: number,
): ChangeEvent[] {
  const decoder = new JournalDecoder(db, tables);
  const rows = db
    .prepare(
      `SELECT ${decoder.selectList()} FROM main.${JOURNAL_TABLE} WHERE seq > ? AND seq <= ? AND tid IN (SELECT value FROM json_each(?)) ORDER BY seq`,
    )
    .raw()
    .all(lo, hi, JSON.stringify(tables.map((t) => t.tid))) as unknown[][];
  return rows.map((r) => decoder.decode(r));
}

/** The seq that ends a batch of at most `limit` events of table `tid` after `lo` (at most `hw`). */
export function batchEnd(db: Db, tid: number, lo: number, hw: number, limit: number): number {
  // At most hw - lo events in (lo, hw] (one per seq): no need to count them.
  if (hw - lo <= limit) return hw;
  const r = cachedStatement(
    db,
    `SELECT seq FROM main.${JOURNAL_TABLE} WHERE tid = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT 1 OFFSET ?`,
    'pluck',
  ).get(tid, lo, hw, limit - 1) as bigint | undefined;
  return r === undefined ? hw : Number(r);
}
