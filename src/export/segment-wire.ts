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
  readonly columns: readonly { readonly name: string; readonly type: string; readonly collate: string }[];
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

/** SQL for one value in the digest: quote(), and `-` after a REAL negative zero (which quote() writes as 0.0). */
function digestValue(c: string): string {
  return `quote(${c}) || CASE WHEN typeof(${c}) = 'real' AND ${c} = 0 AND atan2(${c}, -1) < 0 THEN '-' ELSE '' END`;
}

const CHUNK = 4096;

/**
 * The digest of a segment's rows (the meta's `digest` aside): sha256 over
 * every wire table in a fixed order (meta by name, tables by tno, batches by
 * to_seq, then per table its rows by rowid and its events by seq), each row as its
 * values' quote() joined by `,`, rows by newlines. Run in SQLite, a chunk of
 * rows per call, on the segment as `schema` of `db`.
 */
export function segmentDigest(db: Db, schema: string, tables: readonly SegmentTable[]): string {
  const h = createHash('sha256');
  const s = quoteIdent(schema);
  const meta = db
    .prepare(
      `SELECT CAST(group_concat(${digestValue('name')} || ',' || ${digestValue('value')}, char(10) ORDER BY name) AS BLOB) FROM ${s}.${META_TABLE} WHERE name <> 'digest'`,
    )
    .pluck()
    .get() as Uint8Array | null;
  h.update(`${META_TABLE}\n`);
  if (meta !== null) h.update(meta);
  const byRowid = (table: string, columns: readonly string[], key: string) => {
    h.update(`\n${table}\n`);
    const stmt = db.prepare(
      `SELECT max(k), CAST(group_concat(line, char(10) ORDER BY k) AS BLOB) FROM (SELECT ${key} AS k, ${columns.map(digestValue).join(" || ',' || ")} AS line FROM ${s}.${table} WHERE ${key} > ? ORDER BY ${key} LIMIT ${CHUNK})`,
    );
    stmt.raw(true);
    for (let after: unknown = -(2n ** 63n); ;) {
      const [last, chunk] = stmt.get(after) as [unknown, Uint8Array | null];
      if (last === null || chunk === null) break;
      h.update(chunk);
      h.update('\n');
      after = last;
    }
  };
  byRowid(TABLES_TABLE, ['tno', 'name', 'columns', 'key_columns', 'without_rowid', 'rowid_alias', 'rows', 'events'], 'tno');
  byRowid(BATCHES_TABLE, ['to_seq', 'from_seq', 'cursor', 'events'], 'to_seq');
  for (const t of tables) {
    const n = t.columns.length;
    if (t.rows !== null) byRowid(rowsTable(t.tno), ['rowid', ...cols('c', n)], 'rowid');
    if (t.events > 0) byRowid(eventsTable(t.tno), ['seq', 'op', 'ts', 'mask', 'keys', ...cols('b', n), ...cols('a', n)], 'seq');
  }
  return h.digest('hex');
}
