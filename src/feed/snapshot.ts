import type { Db } from '../sqlite/index.ts';
import {
  collationSql,
  withReadTransaction,
  foldIdent,
  quoteIdent,
  fromDriver,
  type SqlValue,
  lossyTextTest,
  textFromDbBytes,
  primaryKeyCollations,
  cachedStatement,
  setOwn,
} from '../sqlite/index.ts';
import type { CapturedTable } from '../capture/index.ts';
import { cursorToken, readSourceView, resolveTables } from './source-view.ts';
import type { Row } from './events.ts';

export interface SnapshotResult {
  /** Incremental replay starts here: every event after it is newer than the rows read. */
  readonly cursor: string;
  readonly seq: number;
  readonly rows: number;
  readonly tables: readonly CapturedTable[];
}

export interface SnapshotHandlers {
  /** Called once per table before its rows. */
  readonly onTable?: (table: CapturedTable) => void;
  /** Called per row, values in `table.columns` order. Rows are streamed, never held. */
  readonly onRow: (table: CapturedTable, row: readonly SqlValue[]) => void;
}

/**
 * Reads the selected tables and the high-water mark in ONE read transaction,
 * streaming rows to `onRow`. The returned cursor is where replay begins: a
 * new consumer must start here.
 *
 * @example
 * const { cursor } = snapshot(db, ['issues'], { onRow: (t, row) => cache.put(t.name, row) });
 */
export function snapshot(db: Db, tables: readonly string[] | undefined, handlers: SnapshotHandlers): SnapshotResult {
  return withReadTransaction(db, () => {
    const view = readSourceView(db);
    // Counter-mode tables may be named: their consumers re-read them whole
    // when changedSince says so, and need this cursor to ask it.
    const resolved = resolveTables(view, tables, { allowCounter: true });
    let rows = 0;
    for (const t of resolved) {
      handlers.onTable?.(t);
      for (const row of streamTable(db, t)) {
        rows++;
        handlers.onRow(t, row);
      }
    }
    return { cursor: cursorToken(db, view, resolved, view.hw), seq: view.hw, rows, tables: resolved };
  });
}

/**
 * How to read a table's rows exactly. A string holding U+FFFD may hide
 * malformed UTF-8, so that cell is re-read as bytes by rowid (or by key for
 * WITHOUT ROWID tables). Each raw row carries, after the n columns, what
 * finds it again: its rowid, or the bytes of its TEXT key columns.
 */
interface ExactReader {
  /** `SELECT <columns>, <locator> FROM <table>`, to which a WHERE / ORDER BY may be added. */
  readonly select: string;
  /** Rowid table: the locator is the rowid (under this free alias). */
  readonly rowidName: string | undefined;
  /** The raw row's values, exact (a lossy cell re-read by its locator). */
  exact(raw: readonly unknown[]): SqlValue[];
}

/** What reading a table's rows exactly needs of it (a captured table, or a work table of the same columns). */
type RowsOf = Pick<CapturedTable, 'name' | 'columns' | 'keyColumns'> & { readonly excluded?: readonly string[] };

function exactReader(db: Db, t: RowsOf, schema: string): ExactReader {
  const cols = t.columns.map(quoteIdent).join(', ');
  const table = `${quoteIdent(schema)}.${quoteIdent(t.name)}`;
  const n = t.columns.length;
  const byRowid = !isWithoutRowid(db, t.name, schema);
  // A user column may be named rowid (or _rowid_, oid) and hide the real one: use a free alias.
  const alias = ['rowid', '_rowid_', 'oid'].find((a) => !t.columns.some((c) => foldIdent(c) === a));
  const rowidName = byRowid ? alias : undefined;
  const keyPos = t.keyColumns.map((k) => t.columns.indexOf(k));
  // Without a rowid the cell is re-read by key, so the key must be exact too: a
  // malformed TEXT key read through the driver is already lossy and would
  // match no row (the bytes of a missing row decoded as ''). Its bytes ride
  // along (NULL for other storage classes, so integer keys cost nothing).
  const extra =
    rowidName !== undefined
      ? `, ${rowidName}`
      : `, ${t.keyColumns.map((k) => `CASE WHEN typeof(${quoteIdent(k)}) = 'text' THEN CAST(${quoteIdent(k)} AS BLOB) END`).join(', ')}`;
  const lossy = lossyTextTest(db);
  return {
    select: `SELECT ${cols}${extra} FROM ${table}`,
    rowidName,
    exact(raw) {
      const row = raw.length === n ? raw : raw.slice(0, n);
      if (!row.some(lossy)) return row.map((v) => fromDriver(v ?? null));
      // The key: by rowid, or by exact key values (TEXT keys bound as their bytes, cast back to TEXT).
      const keyArgs = rowidName !== undefined ? [raw[n]] : keyPos.map((p, i) => (raw[n + i] !== null ? raw[n + i] : raw[p]));
      const where =
        rowidName !== undefined
          ? `${rowidName} = ?`
          : t.keyColumns.map((k, i) => `${quoteIdent(k)} = ${raw[n + i] !== null ? 'CAST(? AS TEXT)' : '?'}`).join(' AND ');
      return row.map((v, i) => {
        if (!lossy(v)) return fromDriver(v ?? null);
        const col = quoteIdent(t.columns[i] as string);
        const bytes = db
          .prepare(`SELECT CAST(${col} AS BLOB) FROM ${table} WHERE ${where}`)
          .pluck()
          .get(...keyArgs);
        if (!(bytes instanceof Uint8Array)) throw new Error(`sluice: row of ${t.name} vanished inside the snapshot's read transaction`);
        return textFromDbBytes(db, bytes);
      });
    },
  };
}

/** Streams a table's rows with exact values, from one open statement (the consumer must not write to `db` meanwhile). */
function* streamTable(db: Db, t: CapturedTable): Generator<SqlValue[]> {
  const r = exactReader(db, t, 'main');
  for (const raw of db.prepare(r.select).raw().iterate() as IterableIterator<unknown[]>) yield r.exact(raw);
}

/**
 * A table's rows with exact values, read in pages in key order (rowid order
 * for rowid tables), with no statement open between pages: the consumer may
 * run its own statements on `db` while it takes the rows (a custom handler's
 * init does). Call it inside one read (or write) transaction for a
 * consistent snapshot. `schema`: where the table is (a work table in temp).
 */
export function* pagedTable(db: Db, t: RowsOf, pageSize = 500, schema = 'main'): Generator<SqlValue[]> {
  const r = exactReader(db, t, schema);
  const n = t.columns.length;
  // Without a rowid, pages follow the primary key's own index, with its
  // collations (which may differ from the columns' declared ones).
  const pk = schema === 'main' ? primaryKeyCollations(db, t.name) : new Map<string, string>();
  const keyed = t.keyColumns.map((k) => `${quoteIdent(k)}${pk.has(k) ? ` COLLATE ${collationSql(pk.get(k) as string)}` : ''}`);
  const order = r.rowidName !== undefined ? r.rowidName : keyed.join(', ');
  const keyPos = t.keyColumns.map((k) => t.columns.indexOf(k));
  const first = cachedStatement(db, `${r.select} ORDER BY ${order} LIMIT ${pageSize}`, 'raw');
  // After the last row of a page: by rowid, or by its exact key (TEXT keys as
  // their bytes, cast back to TEXT, so a malformed key still compares as itself).
  const next = (raw: readonly unknown[]): unknown[][] => {
    if (r.rowidName !== undefined)
      return cachedStatement(db, `${r.select} WHERE ${r.rowidName} > ? ORDER BY ${order} LIMIT ${pageSize}`, 'raw').all(
        raw[n],
      ) as unknown[][];
    const args = keyPos.map((p, i) => (raw[n + i] !== null ? raw[n + i] : raw[p]));
    const after = `(${keyed.join(', ')}) > (${t.keyColumns.map((_, i) => (raw[n + i] !== null ? 'CAST(? AS TEXT)' : '?')).join(', ')})`;
    return cachedStatement(db, `${r.select} WHERE ${after} ORDER BY ${order} LIMIT ${pageSize}`, 'raw').all(...args) as unknown[][];
  };
  let page = first.all() as unknown[][];
  while (page.length > 0) {
    // Exact values first (they may need statements of their own), then hand the rows over.
    const rows = page.map((raw) => r.exact(raw));
    const last = page[page.length - 1] as unknown[];
    yield* rows;
    if (page.length < pageSize) return;
    page = next(last);
  }
}

function isWithoutRowid(db: Db, table: string, schema: string): boolean {
  const r = db.prepare('SELECT wr FROM main.pragma_table_list(?) WHERE schema = ?').get(table, schema) as { wr: bigint } | undefined;
  return r !== undefined && r.wr !== 0n;
}

/**
 * Rows of a source table for a snapshot: `from(alias)` is a FROM item with
 * the source table's columns (typed and collated as in the source) under
 * their names, read as `alias`; `rows()` reads the same rows one at a time.
 */
export interface SnapshotRows {
  from(alias: string): string;
  rows(): Iterable<Row>;
  /**
   * The same rows in consecutive parts, for a kind that builds in SQL and
   * takes them a part at a time (so that progress can be told between
   * parts); absent: `from` whole. A part's FROM item holds only until the
   * next part is asked for.
   */
  parts?(): Iterable<Pick<SnapshotRows, 'from'>>;
}

/**
 * The rows of captured table `t` as they are in this read transaction, for
 * a snapshot: in SQL, and exact, read in key-ordered pages so that no
 * statement stays open while a custom handler runs its own queries on the
 * same connection (and transaction).
 */
export function sourceRows(db: Db, t: RowsOf, schema = 'main'): SnapshotRows {
  return {
    // With columns left out of capture, only the captured ones are in the FROM item.
    from: (alias) =>
      t.excluded === undefined || t.excluded.length === 0
        ? `${quoteIdent(schema)}.${quoteIdent(t.name)} AS ${quoteIdent(alias)}`
        : `(SELECT ${t.columns.map(quoteIdent).join(', ')} FROM ${quoteIdent(schema)}.${quoteIdent(t.name)}) AS ${quoteIdent(alias)}`,
    *rows() {
      for (const values of pagedTable(db, t, 500, schema)) {
        const row: Record<string, SqlValue> = {};
        t.columns.forEach((c, i) => {
          setOwn(row, c, values[i] ?? null);
        });
        yield row;
      }
    },
  };
}
