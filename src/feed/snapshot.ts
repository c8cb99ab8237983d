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
    const resolved = resolveTables(view, tables);
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
  const byRowid = !isWithoutRowid(db, t.name);
  const select = byRowid ? `SELECT ${cols}, rowid FROM ${table}` : `SELECT ${cols} FROM ${table}`;
  const stmt = db.prepare(select).raw();
  for (const raw of stmt.iterate() as IterableIterator<unknown[]>) {
    const row = t.columns.map((_, i) => raw[i]);
    if (row.some(mayBeLossyText)) {
      yield row.map((v, i) => {
        if (!mayBeLossyText(v)) return fromDriver(v ?? null);
        const col = quoteIdent(t.columns[i] as string);
        const bytes = byRowid
          ? db.prepare(`SELECT CAST(${col} AS BLOB) FROM ${table} WHERE rowid = ?`).pluck().get(raw[t.columns.length])
          : db
              .prepare(`SELECT CAST(${col} AS BLOB) FROM ${table} WHERE ${t.keyColumns.map((k) => `${quoteIdent(k)} = ?`).join(' AND ')}`)
              .pluck()
              .get(...t.keyColumns.map((k) => raw[t.columns.indexOf(k)]));
        return textFromBytes(bytes as Uint8Array);
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
