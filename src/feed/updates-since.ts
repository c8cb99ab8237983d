import type { Db } from '../sqlite/connection.ts';
import { withReadTransaction } from '../sqlite/connection.ts';
import { FailClosedError, InvalidInputError } from '../errors.ts';
import { fromDriver, textFromBytes, type SqlValue } from '../sqlite/codec.ts';
import { JOURNAL_TABLE, OP_UPDATE, journalColumn, julianToMs } from '../capture/schema.ts';
import type { CapturedTable } from '../capture/catalog.ts';
import { readSourceView, resolveTables } from './source-view.ts';
import { readRowByKey, type Row } from './events.ts';

/** The latest change of one row since a version (sqlite-chronicle's `Change`). */
export interface RowChange {
  /** Primary-key values in key order. */
  readonly pks: readonly SqlValue[];
  /** The seq of the row's latest change: pass the highest one seen as `since` next time. */
  readonly version: number;
  readonly updatedMs: number;
  /** Current values, or null when the row no longer exists. */
  readonly row: Row | null;
  readonly deleted: boolean;
}

export interface UpdatesSinceOptions {
  /** Rows fetched per internal page. Default 1000. */
  readonly batchSize?: number;
}

/**
 * Yields the latest change per row of `table` since version `since` (a seq),
 * oldest first, paging internally. Each page is read in one read
 * transaction. Differences from sqlite-chronicle's `updates_since`, and why,
 * are in docs/feed.md: versions are the source-wide seq; a key change
 * yields the old key as deleted and the new key as present; a version below
 * the pruned horizon is an error (CURSOR_PRUNED) instead of a silent gap.
 *
 * @example
 * let since = 0;
 * for (const c of updatesSince(db, 'issues', since)) { index(c); since = c.version; }
 */
export function* updatesSince(db: Db, table: string, since = 0, options: UpdatesSinceOptions = {}): Generator<RowChange> {
  const batchSize = options.batchSize ?? 1000;
  if (!Number.isSafeInteger(since) || since < 0) throw new InvalidInputError('BAD_VERSION', `Version ${since} must be a whole number >= 0 (a seq from a previous change).`);
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new InvalidInputError('BAD_LIMIT', `batchSize ${batchSize} must be a whole number >= 1.`);
  let after = since;
  for (;;) {
    const page = withReadTransaction(db, () => readPage(db, table, since, after, batchSize));
    for (const c of page.changes) yield c;
    if (!page.more) return;
    after = (page.changes[page.changes.length - 1] as RowChange).version;
  }
}

function readPage(db: Db, table: string, since: number, after: number, batchSize: number): { changes: RowChange[]; more: boolean } {
  const view = readSourceView(db);
  const [t] = resolveTables(view, [table]) as [CapturedTable];
  // Entries above `after` are all this page needs (earlier pages covered the rest).
  if (after < view.state.prunedThrough) {
    throw new FailClosedError('CURSOR_PRUNED', `Version ${after} is below the pruned horizon ${view.state.prunedThrough} of ${t.name}; changes in between are gone. Re-read the whole table, then continue from version ${view.hw}.`);
  }
  const k = t.keyColumns.length;
  const width = t.mode === 'images' ? t.columns.length : k;
  const keyPos = t.keyColumns.map((c) => (t.mode === 'images' ? t.columns.indexOf(c) : t.keyColumns.indexOf(c)));
  // Every event touches its current key; an update also touches its old key
  // (the same one unless the key changed, and GROUP BY folds those together).
  const cur = keyPos.map((p, i) => `CASE WHEN op = ${OP_UPDATE} THEN ${journalColumn(width + p)} ELSE ${journalColumn(p)} END AS k${i}`).join(', ');
  const old = keyPos.map((p, i) => `${journalColumn(p)} AS k${i}`).join(', ');
  // typeof() in the grouping keeps 1 and 1.0 apart: a key change between them is real.
  const groupBy = t.keyColumns.map((_, i) => `typeof(k${i}), k${i}`).join(', ');
  // TEXT keys also come back as bytes: the driver's string would hide malformed UTF-8.
  const keyOut = t.keyColumns.map((_, i) => `k${i}, CASE WHEN typeof(k${i}) = 'text' THEN CAST(k${i} AS BLOB) END`).join(', ');
  // Named parameters: better-sqlite3 cannot bind positional values to ?NNN.
  const sql = `WITH touched AS (
      SELECT seq, ts, ${cur} FROM main.${JOURNAL_TABLE} WHERE tid = @tid AND seq > @since AND seq <= @hw
      UNION ALL
      SELECT seq, ts, ${old} FROM main.${JOURNAL_TABLE} WHERE tid = @tid AND seq > @since AND seq <= @hw AND op = ${OP_UPDATE}
    )
    SELECT max(seq) AS version, ts, ${keyOut} FROM touched GROUP BY ${groupBy} HAVING max(seq) > @after ORDER BY version LIMIT @limit`;
  // One row more than asked: a key change puts its old and new key at the same
  // version, and a page must not end between them (the next page starts above it).
  const rows = db.prepare(sql).raw().all({ tid: t.tid, since, hw: view.hw, after, limit: batchSize + 1 }) as unknown[][];
  let more = false;
  if (rows.length > batchSize) {
    more = true;
    if (rows[batchSize]?.[0] !== rows[batchSize - 1]?.[0]) rows.length = batchSize;
  }
  const cache = new Map();
  const changes = rows.map((r) => {
    const pks = t.keyColumns.map((_, i): SqlValue => {
      const bytes = r[2 + 2 * i + 1];
      return bytes instanceof Uint8Array ? textFromBytes(bytes) : fromDriver(r[2 + 2 * i] ?? null);
    });
    const row = readRowByKey(db, t, pks, cache);
    return { pks, version: Number(r[0]), updatedMs: julianToMs(r[1] as number), row, deleted: row === null };
  });
  return { changes, more };
}
