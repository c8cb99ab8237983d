import type { Db } from '../sqlite/index.ts';
import { setOwn, withReadTransaction, fromDriver, type SqlValue, textFromDbBytes } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { JOURNAL_TABLE, OP_UPDATE, journalColumn, julianToMs } from '../capture/index.ts';
import type { CapturedTable } from '../capture/index.ts';
import type { Cursor } from './cursor.ts';
import { requireValidCursor } from './cursor-check.ts';
import { counterModeTable, cursorToken, readSourceView, resolveTables } from './source-view.ts';
import { readRowByKey, type Row } from './events.ts';
import { pagedTable } from './snapshot.ts';
import { columnFilterSql } from './column-filter.ts';

/** The latest change of one row since a cursor (sqlite-chronicle's `Change`). */
export interface RowChange {
  /** Primary-key values in key order. */
  readonly pks: readonly SqlValue[];
  /** The seq of the row's latest change (the full read's seq for a row it read). */
  readonly version: number;
  /** When the latest change was written; null for a row of the full read (the journal may not hold it). */
  readonly updatedMs: number | null;
  /** Current values, or null when the row no longer exists. */
  readonly row: Row | null;
  readonly deleted: boolean;
  /**
   * Where to continue once this change is applied: pass it as `since` next
   * time. Undefined for the rows of a full read before its last one
   * (continuing there means reading the whole table again, which passing
   * undefined does).
   */
  readonly cursor: string | undefined;
}

export interface UpdatesSinceOptions {
  /** Rows fetched per internal page. Default 1000. */
  readonly batchSize?: number;
  /**
   * Only rows whose changes since the cursor include an update of one of
   * these columns, an insert, a delete or a key change (see
   * feed/column-filter.ts): "re-embed when the text changed". A full read
   * (no `since`) still yields every row. Default: every changed row.
   */
  readonly columns?: readonly string[];
}

export interface UpdatesPage {
  /** At most `limit` changes, oldest first (one more when a key change would be split). */
  readonly changes: readonly RowChange[];
  /** The cursor to continue from: at the high-water mark read when `hasMore` is false. */
  readonly cursor: string;
  readonly hasMore: boolean;
}

const DEFAULT_BATCH = 1000;

function checkBatchSize(n: number): void {
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidInputError('BAD_LIMIT', `batchSize ${n} must be a whole number >= 1.`);
}

/*
 * A bare seq cannot be validated: it names no source, generation, schema or
 * mode, so a re-created, restored or re-armed source (or one whose table
 * changed mode) would answer it silently wrong. Only a cursor is accepted.
 */
function checkSince(table: string, since: unknown): asserts since is string | Cursor | undefined {
  if (since === undefined || typeof since === 'string' || (typeof since === 'object' && since !== null)) return;
  throw new InvalidInputError(
    'CURSOR_REQUIRED',
    `updatesSince(${table}): since ${String(since)} is a bare version, which cannot be checked against the source (it names no source, generation, schema or mode). Pass a cursor instead: a change's \`cursor\`, the \`cursor\` of updatesPage or snapshot(db, ['${table}'], ...), or omit since to read the whole table first.`,
  );
}

/**
 * Yields the latest change per row of `table` since `since` (a cursor),
 * oldest first, paging internally (each page in one read transaction, its
 * cursor validated there exactly as validateCursor decides: a cursor that
 * must be rebuilt throws FailClosedError with the reason as its code).
 * Without `since`, every current row is yielded first (a full read), then
 * every change after it. The generator's return value is the cursor at the
 * last high-water mark read. Differences from sqlite-chronicle's
 * `updates_since`, and why, are in docs/feed.md.
 *
 * @example
 * let since: string | undefined; // stored by the consumer
 * for (const c of updatesSince(db, 'issues', since)) { index(c); since = c.cursor ?? since; }
 */
export function* updatesSince(
  db: Db,
  table: string,
  since?: string | Cursor,
  options: UpdatesSinceOptions = {},
): Generator<RowChange, string, undefined> {
  checkSince(table, since);
  const batchSize = options.batchSize ?? DEFAULT_BATCH;
  checkBatchSize(batchSize);
  // Unknown columns are refused before anything is read.
  if (options.columns !== undefined)
    withReadTransaction(db, () => columnFilterSql(db, resolveTables(readSourceView(db), [table]), options.columns));
  let cursor = since ?? (yield* fullRead(db, table, batchSize));
  for (;;) {
    const page = updatesPage(db, table, cursor, {
      limit: batchSize,
      ...(options.columns === undefined ? {} : { columns: options.columns }),
    });
    yield* page.changes;
    cursor = page.cursor;
    if (!page.hasMore) return cursor;
  }
}

/** Every current row of `table`, paged by key; returns the cursor of the first page's high-water mark. */
function* fullRead(db: Db, table: string, batchSize: number): Generator<RowChange, string, undefined> {
  let start: { cursor: string; seq: number; table: CapturedTable; rows: Generator<SqlValue[]> } | undefined;
  let ahead: IteratorResult<SqlValue[]> | undefined;
  for (;;) {
    // Each page in its own read transaction, which first checks that the
    // source is still the one the first page read: every change after that
    // first high-water mark is then delivered by the changes that follow.
    const page = withReadTransaction(db, () => {
      if (start === undefined) {
        const view = readSourceView(db);
        const [t] = resolveTables(view, [table]) as [CapturedTable];
        start = { cursor: cursorToken(db, view, [t], view.hw), seq: view.hw, table: t, rows: pagedTable(db, t, batchSize) };
        ahead = start.rows.next();
      } else requireValidCursor(db, start.cursor);
      const rows: SqlValue[][] = [];
      while (ahead?.done === false && rows.length < batchSize) {
        rows.push(ahead.value);
        ahead = start.rows.next();
      }
      return rows;
    });
    const s = start as NonNullable<typeof start>;
    const done = ahead?.done !== false;
    const keyPos = s.table.keyColumns.map((k) => s.table.columns.indexOf(k));
    for (let i = 0; i < page.length; i++) {
      const values = page[i] as SqlValue[];
      const row: Record<string, SqlValue> = {};
      s.table.columns.forEach((c, j) => setOwn(row, c, values[j] ?? null));
      const last = done && i === page.length - 1;
      yield {
        pks: keyPos.map((p) => values[p] ?? null),
        version: s.seq,
        updatedMs: null,
        row,
        deleted: false,
        cursor: last ? s.cursor : undefined,
      };
    }
    if (done) return s.cursor;
  }
}

/**
 * One page of updatesSince after `since` (a cursor covering `table`), in one
 * read transaction: the cursor is validated first (requireValidCursor), and
 * the returned cursor continues after the page.
 */
export function updatesPage(
  db: Db,
  table: string,
  since: string | Cursor,
  options: { readonly limit?: number; readonly columns?: readonly string[] } = {},
): UpdatesPage {
  checkSince(table, since);
  if (since === undefined)
    throw new InvalidInputError('CURSOR_REQUIRED', `updatesPage(${table}) needs a cursor; use updatesSince without since for a full read.`);
  const limit = options.limit ?? DEFAULT_BATCH;
  checkBatchSize(limit);
  return withReadTransaction(db, () => {
    const v = requireValidCursor(db, since);
    const t = v.tables.find((x) => x.name.toLowerCase() === table.toLowerCase());
    if (t === undefined)
      throw new InvalidInputError(
        'TABLE_NOT_IN_CURSOR',
        `Table ${table} is not covered by this cursor (it covers ${v.cursor.tables.join(', ')}). Start a new cursor that includes it.`,
      );
    if (t.mode === 'counter') {
      throw counterModeTable(t.name);
    }
    const { rows, more } = readChanges(db, t, v.cursor.seq, v.view.hw, limit, columnFilterSql(db, [t], options.columns));
    const at = (seq: number) => cursorToken(db, v.view, [t], seq);
    const changes = rows.map((c, i): RowChange => {
      // A key change puts its old and new key at one version: continuing
      // after the first of the two must not skip the second.
      const split = rows[i + 1]?.version === c.version;
      return { ...c, cursor: at(split ? c.version - 1 : c.version) };
    });
    const end = more ? (rows[rows.length - 1] as { version: number }).version : v.view.hw;
    return { changes, cursor: at(end), hasMore: more };
  });
}

type Change = Omit<RowChange, 'cursor'>;

/** The latest change per row of `t` with since < seq <= hw, at most `limit` versions (never splitting one). */
function readChanges(
  db: Db,
  t: CapturedTable,
  since: number,
  hw: number,
  limit: number,
  filter: string,
): { rows: Change[]; more: boolean } {
  const width = t.mode === 'images' ? t.columns.length : t.keyColumns.length;
  const keyPos = t.keyColumns.map((c) => (t.mode === 'images' ? t.columns.indexOf(c) : t.keyColumns.indexOf(c)));
  // Every event touches its current key; an update also touches its old key
  // (the same one unless the key changed, and GROUP BY folds those together).
  const cur = keyPos
    .map((p, i) => `CASE WHEN op = ${OP_UPDATE} THEN ${journalColumn(width + p)} ELSE ${journalColumn(p)} END AS k${i}`)
    .join(', ');
  const old = keyPos.map((p, i) => `${journalColumn(p)} AS k${i}`).join(', ');
  // typeof() in the grouping keeps 1 and 1.0 apart: a key change between them is real.
  const groupBy = t.keyColumns.map((_, i) => `typeof(k${i}), k${i}`).join(', ');
  // TEXT keys also come back as bytes: the driver's string would hide malformed UTF-8.
  const keyOut = t.keyColumns.map((_, i) => `k${i}, CASE WHEN typeof(k${i}) = 'text' THEN CAST(k${i} AS BLOB) END`).join(', ');
  // Named parameters: better-sqlite3 cannot bind positional values to ?NNN.
  const sql = `WITH touched AS (
      SELECT seq, ts, ${cur} FROM main.${JOURNAL_TABLE} WHERE tid = @tid AND seq > @since AND seq <= @hw${filter}
      UNION ALL
      SELECT seq, ts, ${old} FROM main.${JOURNAL_TABLE} WHERE tid = @tid AND seq > @since AND seq <= @hw AND op = ${OP_UPDATE}${filter}
    )
    SELECT max(seq) AS version, ts, ${keyOut} FROM touched GROUP BY ${groupBy} ORDER BY version LIMIT @limit`;
  // One row more than asked: a key change puts its old and new key at the same
  // version, and a page must not end between them (the next page starts above it).
  const raw = db
    .prepare(sql)
    .raw()
    .all({ tid: t.tid, since, hw, limit: limit + 1 }) as unknown[][];
  let more = false;
  if (raw.length > limit) {
    more = true;
    if (raw[limit]?.[0] !== raw[limit - 1]?.[0]) raw.length = limit;
  }
  const cache = new Map();
  const rows = raw.map((r) => {
    const pks = t.keyColumns.map((_, i): SqlValue => {
      const bytes = r[2 + 2 * i + 1];
      return bytes instanceof Uint8Array ? textFromDbBytes(db, bytes) : fromDriver(r[2 + 2 * i] ?? null);
    });
    const row = readRowByKey(db, t, pks, cache);
    return { pks, version: Number(r[0]), updatedMs: julianToMs(r[1] as number), row, deleted: row === null };
  });
  return { rows, more };
}
