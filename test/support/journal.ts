import fs from 'node:fs';
import { createHash } from 'node:crypto';
import type { Db } from '../../src/sqlite/index.ts';
import { quoteIdent } from '../../src/sqlite/index.ts';
import { runPython } from './fixtures.ts';

/*
 * Helpers that read the journal and the source by storage class and bytes,
 * never through a JS string: a cell is `typeof:HEX`. hex() of a REAL goes
 * through its text rendering, so a REAL is written as its 8 IEEE-754 bytes
 * instead (read from the driver, which returns the exact double).
 */

export type Cell = string;

export interface JournalEvent {
  readonly seq: number;
  readonly table: string;
  readonly op: 'insert' | 'update' | 'delete';
  /** Before image (update, delete). */
  readonly before?: readonly Cell[];
  /** After image (insert, update). */
  readonly after?: readonly Cell[];
  /** Journal image columns past the ones this event uses: always NULL. */
  readonly unused: readonly Cell[];
}

function realCell(v: unknown): Cell {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(Number(v));
  return `real:${b.toString('hex').toUpperCase()}`;
}

/** SELECT list that yields typeof/hex/real-value triples for each expression. */
function cellSelect(exprs: readonly string[]): string {
  return exprs
    .map((e, i) => `typeof(${e}) AS t${i}, hex(${e}) AS h${i}, CASE WHEN typeof(${e}) = 'real' THEN ${e} END AS r${i}`)
    .join(', ');
}

function cellsFrom(row: Record<string, unknown>, n: number): Cell[] {
  return Array.from({ length: n }, (_, i) => {
    const t = String(row[`t${i}`]);
    return t === 'real' ? realCell(row[`r${i}`]) : `${t}:${String(row[`h${i}`])}`;
  });
}

/** A cell for a JS-side expectation. */
export const cell = {
  null: (): Cell => 'null:',
  int: (n: bigint | number): Cell => `integer:${Buffer.from(BigInt(n).toString(), 'latin1').toString('hex').toUpperCase()}`,
  real: (x: number): Cell => realCell(x),
  text: (s: string | Uint8Array): Cell => `text:${Buffer.from(s).toString('hex').toUpperCase()}`,
  blob: (b: Uint8Array): Cell => `blob:${Buffer.from(b).toString('hex').toUpperCase()}`,
};

const OPS = { 1: 'insert', 2: 'update', 3: 'delete' } as const;

/** Every journal row, decoded into images by the table's captured column list. */
export function journalEvents(db: Db, options: { readonly sinceSeq?: number } = {}): JournalEvent[] {
  const state = db.prepare('SELECT journal_width AS w FROM main._sluice_state').get() as { w: bigint };
  const width = Number(state.w);
  const tables = new Map(
    (
      db.prepare('SELECT tid, name, mode, columns, key_columns FROM main._sluice_tables').all() as {
        tid: bigint;
        name: string;
        mode: string;
        columns: string;
        key_columns: string;
      }[]
    ).map((t) => [
      Number(t.tid),
      {
        name: t.name,
        n:
          t.mode === 'images'
            ? (JSON.parse(t.columns) as string[]).length
            : t.mode === 'keys'
              ? (JSON.parse(t.key_columns) as string[]).length
              : 0,
      },
    ]),
  );
  const cols = Array.from({ length: width }, (_, i) => `c${i}`);
  const sel = cols.length > 0 ? `, ${cellSelect(cols)}` : '';
  const rows = db
    .prepare(`SELECT seq, tid, op${sel} FROM main._sluice_journal WHERE seq > ? ORDER BY seq`)
    .all(options.sinceSeq ?? 0) as Record<string, unknown>[];
  return rows.map((r) => {
    const t = tables.get(Number(r.tid));
    if (t === undefined) throw new Error(`journal row ${String(r.seq)} names unknown tid ${String(r.tid)}`);
    const cells = cellsFrom(r, width);
    const op = OPS[Number(r.op) as 1 | 2 | 3];
    const used = op === 'update' ? 2 * t.n : t.n;
    const base = { seq: Number(r.seq), table: t.name, op, unused: cells.slice(used) };
    if (op === 'insert') return { ...base, after: cells.slice(0, t.n) };
    if (op === 'delete') return { ...base, before: cells.slice(0, t.n) };
    return { ...base, before: cells.slice(0, t.n), after: cells.slice(t.n, 2 * t.n) };
  });
}

/** Events without seq/unused: what must match across writers. */
export function eventShapes(events: readonly JournalEvent[]): unknown[] {
  return events.map(({ table, op, before, after }) => ({ table, op, before, after }));
}

export function columnsOf(db: Db, table: string): string[] {
  return (db.prepare("SELECT name FROM main.pragma_table_info(?, 'main')").all(table) as { name: string }[]).map((r) => r.name);
}

/** The rows of a source table as cells, ordered by every column (`columns`: default those of table_info, generated ones left out). */
export function tableCells(
  db: Db,
  table: string,
  where = '1',
  params: readonly unknown[] = [],
  columns: readonly string[] = columnsOf(db, table),
): Cell[][] {
  const cols = columns.map(quoteIdent);
  const rows = db
    .prepare(`SELECT ${cellSelect(cols)} FROM main.${quoteIdent(table)} WHERE ${where} ORDER BY ${cols.join(', ')}`)
    .all(...params) as Record<string, unknown>[];
  return rows.map((r) => cellsFrom(r, cols.length));
}

/** One source row as cells (undefined when absent). */
export function rowCells(db: Db, table: string, where: string, params: readonly unknown[] = []): Cell[] | undefined {
  const rows = tableCells(db, table, where, params);
  if (rows.length > 1) throw new Error(`${where} matched ${rows.length} rows`);
  return rows[0];
}

function fileHash(file: string): string | null {
  return fs.existsSync(file) ? createHash('sha256').update(fs.readFileSync(file)).digest('hex') : null;
}

/**
 * Everything a refused enable must leave untouched: main and temp schema,
 * schema_version, every table's rows by storage class and bytes, and the
 * bytes of the database file and its WAL.
 */
export function databaseImage(db: Db, file: string): unknown {
  const schema = db.prepare('SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY type, name').all();
  const temp = db.prepare('SELECT type, name, tbl_name, sql FROM temp.sqlite_schema ORDER BY type, name').all();
  const version = db.prepare('PRAGMA main.schema_version').get();
  const data: Record<string, unknown> = {};
  for (const r of db.prepare("SELECT name FROM main.sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'").all() as {
    name: string;
  }[]) {
    data[r.name] = tableCells(db, r.name);
  }
  return { schema, temp, version, data, file: fileHash(file), wal: fileHash(`${file}-wal`) };
}

/**
 * Runs SQL in Python's stdlib sqlite3 (a writer that knows nothing of sluice).
 * `pragmas` run first; the script runs with executescript (its own
 * BEGIN/COMMIT/ROLLBACK statements are honoured).
 */
export function pythonExec(file: string, sql: string, pragmas: readonly string[] = []): string {
  return runPython(
    `
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=10)
for p in sys.argv[3:]:
    conn.execute(p)
conn.executescript(sys.argv[2])
conn.close()
`,
    [file, sql, ...pragmas],
  );
}
