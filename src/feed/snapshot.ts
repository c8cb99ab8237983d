import type { Db } from '../sqlite/connection.ts';
import { withReadTransaction } from '../sqlite/connection.ts';
import { quoteIdent } from '../sqlite/quote.ts';
import { fromDriver, mayBeLossyText, textFromBytes, type SqlValue } from '../sqlite/codec.ts';
import type { CapturedTable } from '../capture/catalog.ts';
import { cursorToken, readSourceView, resolveTables } from './source-view.ts';

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
 * Streams a table's rows with exact values. A string holding U+FFFD may hide
 * malformed UTF-8, so that cell is re-read as bytes by rowid (or by key for
 * WITHOUT ROWID tables).
 */
export function* streamTable(db: Db, t: CapturedTable): Generator<SqlValue[]> {
  const cols = t.columns.map(quoteIdent).join(', ');
  const table = `main.${quoteIdent(t.name)}`;
  const n = t.columns.length;
  const byRowid = !isWithoutRowid(db, t.name);
  // A user column may be named rowid (or _rowid_, oid) and hide the real one: use a free alias.
  const rowidName = ['rowid', '_rowid_', 'oid'].find((a) => !t.columns.some((c) => c.toLowerCase() === a));
  const keyPos = t.keyColumns.map((k) => t.columns.indexOf(k));
  // Without a rowid the cell is re-read by key, so the key must be exact too: a
  // malformed TEXT key read through the driver is already lossy and would
  // match no row (the bytes of a missing row decoded as ''). Its bytes ride
  // along (NULL for other storage classes, so integer keys cost nothing).
  const extra = byRowid && rowidName !== undefined
    ? `, ${rowidName}`
    : `, ${t.keyColumns.map((k) => `CASE WHEN typeof(${quoteIdent(k)}) = 'text' THEN CAST(${quoteIdent(k)} AS BLOB) END`).join(', ')}`;
  const stmt = db.prepare(`SELECT ${cols}${extra} FROM ${table}`).raw();
  const useRowid = byRowid && rowidName !== undefined;
  for (const raw of stmt.iterate() as IterableIterator<unknown[]>) {
    const row = raw.length === n ? raw : raw.slice(0, n);
    if (row.some(mayBeLossyText)) {
      // The key: by rowid, or by exact key values (TEXT keys bound as their bytes, cast back to TEXT).
      const keyArgs = useRowid ? [raw[n]] : keyPos.map((p, i) => (raw[n + i] !== null ? raw[n + i] : raw[p]));
      const where = useRowid
        ? `${rowidName} = ?`
        : t.keyColumns.map((k, i) => `${quoteIdent(k)} = ${raw[n + i] !== null ? 'CAST(? AS TEXT)' : '?'}`).join(' AND ');
      yield row.map((v, i) => {
        if (!mayBeLossyText(v)) return fromDriver(v ?? null);
        const col = quoteIdent(t.columns[i] as string);
        const bytes = db.prepare(`SELECT CAST(${col} AS BLOB) FROM ${table} WHERE ${where}`).pluck().get(...keyArgs);
        if (!(bytes instanceof Uint8Array)) throw new Error(`sluice: row of ${t.name} vanished inside the snapshot's read transaction`);
        return textFromBytes(bytes);
      });
    } else {
      yield row.map((v) => fromDriver(v ?? null));
    }
  }
}

function isWithoutRowid(db: Db, table: string): boolean {
  const r = db.prepare("SELECT wr FROM main.pragma_table_list(?) WHERE schema = 'main'").get(table) as { wr: bigint } | undefined;
  return r !== undefined && r.wr !== 0n;
}
