import fs from 'node:fs';
import { createHash } from 'node:crypto';
import type { Db } from '../sqlite/index.ts';
import { quoteIdent } from '../sqlite/index.ts';

/*
 * The batch segment's wire schema, version 1 (docs/segment.md): a small
 * SQLite file of sluice's own, not the journal's layout (which changes).
 * Every object is listed here, with its exact DDL: a reader refuses a file
 * holding any other (segment-check.ts).
 *
 *   segment             name/value meta: wire, source_id, encoding, counts, digest...
 *   segment_tables      one row per source table (tno): its shape, as a JSONL table line carries it
 *   segment_batches     one row per batch: (from_seq, to_seq], its cursor, its event count
 *   segment_rows_<tno>  a snapshot's rows of table tno: c0..c(n-1) in its column order
 *   segment_events_<tno> events of table tno: seq, op, ts, mask, keys, b0..b(n-1), a0..a(n-1)
 *
 * The header also carries it: application_id SEGMENT_APP_ID, user_version
 * the wire version, a rollback journal (never WAL).
 */

export const SEGMENT_WIRE_VERSION = 1;
/** 'SLSG' */
export const SEGMENT_APP_ID = 0x534c5347;
/** The first 16 bytes of every SQLite file (and so of every segment). */
export const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

export const OP = { insert: 1, update: 2, delete: 3 } as const;

export const META_TABLE = 'segment';
export const TABLES_TABLE = 'segment_tables';
export const BATCHES_TABLE = 'segment_batches';
export const rowsTable = (tno: number) => `segment_rows_${tno}`;
export const eventsTable = (tno: number) => `segment_events_${tno}`;

export const META_DDL = `CREATE TABLE ${META_TABLE} (name TEXT PRIMARY KEY NOT NULL, value NOT NULL) WITHOUT ROWID`;
export const TABLES_DDL = `CREATE TABLE ${TABLES_TABLE} (tno INTEGER PRIMARY KEY, name TEXT NOT NULL, columns TEXT NOT NULL, key_columns TEXT NOT NULL, without_rowid INTEGER NOT NULL, rowid_alias INTEGER NOT NULL, rows INTEGER, events INTEGER NOT NULL)`;
export const BATCHES_DDL = `CREATE TABLE ${BATCHES_TABLE} (to_seq INTEGER PRIMARY KEY, from_seq INTEGER NOT NULL, cursor TEXT NOT NULL, events INTEGER NOT NULL)`;

const cols = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

export function rowsDdl(tno: number, n: number): string {
  return `CREATE TABLE ${rowsTable(tno)} (${cols('c', n).join(', ')})`;
}

export function eventsDdl(tno: number, n: number): string {
  return `CREATE TABLE ${eventsTable(tno)} (seq INTEGER PRIMARY KEY, op INTEGER NOT NULL, ts INTEGER NOT NULL, mask, keys TEXT, ${[...cols('b', n), ...cols('a', n)].join(', ')})`;
}

/** One source table of a segment (segment_tables). */
export interface SegmentTable {
  readonly tno: number;
  readonly name: string;
  readonly columns: readonly { readonly name: string; readonly type: string; readonly collate: string; readonly anyNumeric?: true }[];
  readonly keyColumns: readonly string[];
  readonly withoutRowid: boolean;
  readonly rowidAlias: boolean;
  /** Snapshot rows of it (null: not in the segment's snapshot). */
  readonly rows: number | null;
  /** Events of it in the segment's batches. */
  readonly events: number;
}

/** Every object a segment with these tables holds: name to its exact DDL. */
export function expectedObjects(tables: readonly SegmentTable[]): Map<string, string> {
  const m = new Map<string, string>([
    [META_TABLE, META_DDL],
    [TABLES_TABLE, TABLES_DDL],
    [BATCHES_TABLE, BATCHES_DDL],
  ]);
  for (const t of tables) {
    if (t.rows !== null) m.set(rowsTable(t.tno), rowsDdl(t.tno, t.columns.length));
    if (t.events > 0) m.set(eventsTable(t.tno), eventsDdl(t.tno, t.columns.length));
  }
  return m;
}

/** The pages of the meta table (which holds the digest), from dbstat. */
export function metaPages(db: Db, schema: string): Set<number> {
  const pages = db
    .prepare(`SELECT pageno FROM ${quoteIdent(schema)}.dbstat WHERE name = ?`)
    .pluck()
    .all(META_TABLE) as unknown[];
  return new Set(pages.map(Number));
}

/**
 * The digest of a segment (docs/segment.md, "Digest"): sha256 over the
 * file's bytes, page by page in file order, leaving out page 1 (the header
 * and the schema, both checked exactly instead) and the pages of the meta
 * table (which holds the digest). Every row of every other table lies in
 * the pages it covers, so an edited, moved or lost row changes it; reading
 * the file is far cheaper than reading its rows back through SQL.
 */
export function segmentDigest(file: string, pageSize: number, skip: ReadonlySet<number>): string {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    // As large as the file needs (up to 256 pages), and not zeroed: only what readSync filled is hashed. A zeroed
    // megabyte for every segment was a millisecond of a broker message's few (publish, and each subscriber's check).
    const chunk = Buffer.allocUnsafe(pageSize * Math.max(1, Math.min(256, Math.floor(size / pageSize) - 1)));
    return digestPages(size, pageSize, skip, (first, count) =>
      chunk.subarray(0, fs.readSync(fd, chunk, 0, count * pageSize, (first - 1) * pageSize)),
    );
  } finally {
    fs.closeSync(fd);
  }
}

/** segmentDigest of a segment's bytes held in memory (a broker's message). */
export function segmentDigestOfBytes(bytes: Uint8Array, pageSize: number, skip: ReadonlySet<number>): string {
  return digestPages(bytes.length, pageSize, skip, (first, count) =>
    bytes.subarray((first - 1) * pageSize, Math.min(bytes.length, (first - 1 + count) * pageSize)),
  );
}

/**
 * The digest of what the page digest leaves out and a reader acts on
 * (docs/segment.md, "Digest"): which table each root page is (page 1's
 * schema rows, whose SQL is checked exactly but whose root pages are not),
 * and the meta's entries (seq ranges, cursors, counts), but for the two
 * digests. Swapped root pages put one table's rows in another; an edited
 * meta seq made an import skip a batch as applied. Kept in the meta as
 * `frame`; a segment of an older sluice has none, and is checked without.
 */
export function frameDigest(db: Db, schema: string): string {
  const s = quoteIdent(schema);
  // Each value as its storage class and text, read in SQL: the same whatever integer mode the connection reads with
  // (JS's typeof said 'number' or 'bigint' by the reader's setting, so a writer and a reader that differ would disagree).
  const roots = db.prepare(`SELECT name, typeof(rootpage) || ':' || rootpage FROM ${s}.sqlite_schema ORDER BY name`).raw().all() as [
    string,
    string,
  ][];
  const meta = db
    .prepare(
      `SELECT name, typeof(value) || ':' || CAST(value AS TEXT) FROM ${s}.${META_TABLE} WHERE name NOT IN ('digest', 'frame') ORDER BY name`,
    )
    .raw()
    .all() as [string, string][];
  return createHash('sha256').update(JSON.stringify({ roots, meta })).digest('hex');
}

/** The digest over pages 2.. of `size` bytes, but for `skip`; `read` gives `count` pages from page `first` (fewer bytes: the end). */
function digestPages(
  size: number,
  pageSize: number,
  skip: ReadonlySet<number>,
  read: (first: number, count: number) => Uint8Array,
): string {
  const h = createHash('sha256');
  const pages = Math.floor(size / pageSize);
  for (let first = 2; first <= pages; first += 256) {
    const count = Math.min(256, pages - first + 1);
    const chunk = read(first, count);
    for (let i = 0; i < count && (i + 1) * pageSize <= chunk.length; i++) {
      if (skip.has(first + i)) continue;
      h.update(chunk.subarray(i * pageSize, (i + 1) * pageSize));
    }
  }
  return h.digest('hex');
}
