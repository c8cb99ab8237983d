import {
  columnDecl,
  isRawText,
  placeholderFor,
  toBindable,
  type SqlValue,
  quoteIdent,
  hasUnpairedSurrogate,
  unpairedToDb,
  cachedStatement,
  workTable,
} from '../sqlite/index.ts';
import type { Db } from '../sqlite/index.ts';
import type { Row } from './events.ts';
import type { SnapshotRows } from './snapshot.ts';

/** A source column as the snapshot of a decoded stream declares it. */
interface DecodedColumn {
  readonly name: string;
  readonly type: string;
  readonly collate: string;
}

/** A value as `db` stores it: text with a lone surrogate (from a UTF-16 source) as the database's own bytes for it. */
export function storable(db: Db, v: SqlValue): SqlValue {
  return typeof v === 'string' && hasUnpairedSurrogate(v) ? unpairedToDb(db, v) : v;
}

/**
 * Snapshot rows decoded elsewhere (an export file, a broker), written into
 * a TEMP work table declared like the source table (types and collations),
 * so a kind builds from them with the same SQL as from the source itself.
 * The table holds these rows until the next call; `rows()` reads the array.
 */
export function decodedRows(db: Db, columns: readonly DecodedColumn[], rows: readonly Row[]): SnapshotRows {
  const decl = columns.map((c) => `${quoteIdent(c.name)} ${columnDecl(c)}`).join(', ');
  const table = workTable(db, '_sluice_snap', decl);
  cachedStatement(db, `DELETE FROM ${table}`).run();
  const names = columns.map((c) => quoteIdent(c.name)).join(', ');
  const insertSql = (values: readonly SqlValue[]) => `INSERT INTO ${table} (${names}) VALUES (${values.map(placeholderFor).join(', ')})`;
  // Rows without raw text (all but a UTF-16 source's lone surrogates) share one statement, looked up once per chunk, not per row.
  const plain = cachedStatement(db, insertSql(columns.map(() => null)));
  for (const row of rows) {
    const values = columns.map((c) => storable(db, row[c.name] ?? null));
    (values.some(isRawText) ? cachedStatement(db, insertSql(values)) : plain).run(...values.map(toBindable));
  }
  return { from: (alias) => `${table} AS ${quoteIdent(alias)}`, rows: () => rows };
}
