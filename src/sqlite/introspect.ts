import { createHash } from 'node:crypto';
import type { Db } from './connection.ts';
import { cachedStatement } from './statement-cache.ts';
import { quoteIdent } from './quote.ts';

/*
 * Schema introspection goes only through pragma *functions* qualified with
 * `main` and called with arguments: a regular table named like a pragma
 * cannot stand in for them. The `main.` prefix alone does not pick the
 * schema the pragma reads (pragma_table_xinfo('t') resolves `t` like plain
 * SQL, so a TEMP table t shadows main.t); the schema is therefore passed as
 * the pragma's second argument, 'main', so TEMP objects cannot shadow what
 * we read.
 */

interface ColumnInfo {
  readonly name: string;
  readonly type: string;
  readonly notNull: boolean;
  readonly defaultSql: string | null;
  /** 1-based position in the primary key, 0 when not a key column. */
  readonly pkIndex: number;
  /** 0 ordinary, 2 generated virtual, 3 generated stored (pragma_table_xinfo). */
  readonly hidden: number;
}

interface ForeignKeyInfo {
  readonly id: number;
  readonly table: string;
  readonly from: string;
  readonly to: string | null;
  readonly onUpdate: string;
  readonly onDelete: string;
}

type ObjectKind = 'table' | 'view' | 'virtual' | 'shadow';

export interface TableInfo {
  readonly name: string;
  readonly kind: ObjectKind;
  readonly withoutRowid: boolean;
  readonly strict: boolean;
  readonly columns: readonly ColumnInfo[];
  /** Primary-key column names in key order; empty when the table has none (hidden rowid). */
  readonly keyColumns: readonly string[];
  /** True when the key is the INTEGER PRIMARY KEY rowid alias. */
  readonly rowidAlias: boolean;
  readonly sql: string | null;
}

interface TableListRow {
  schema: string;
  name: string;
  type: string;
  wr: bigint;
  strict: bigint;
}

/** Objects named `name` (case-insensitively) in main and temp. */
export function findObjects(db: Db, name: string): { schema: string; name: string; type: string }[] {
  const tables = db.prepare('SELECT schema, name, type FROM main.pragma_table_list(?)').all(name) as TableListRow[];
  const temp = db
    .prepare("SELECT 'temp' AS schema, name, type FROM temp.sqlite_schema WHERE name = ? COLLATE NOCASE AND type NOT IN ('table','view')")
    .all(name) as TableListRow[];
  return [...tables, ...temp].map((r) => ({ schema: r.schema, name: r.name, type: r.type }));
}

export function describeTable(db: Db, name: string): TableInfo | undefined {
  const row = (db.prepare('SELECT schema, name, type, wr, strict FROM main.pragma_table_list(?)').all(name) as TableListRow[]).find(
    (r) => r.schema === 'main',
  );
  if (row === undefined) return undefined;
  const cols = db
    .prepare(`SELECT name, type, "notnull" AS nn, dflt_value AS dflt, pk, hidden FROM main.pragma_table_xinfo(?, 'main')`)
    .all(row.name) as { name: string; type: string; nn: bigint; dflt: string | null; pk: bigint; hidden: bigint }[];
  const columns: ColumnInfo[] = cols
    .filter((c) => Number(c.hidden) !== 1)
    .map((c) => ({
      name: c.name,
      type: c.type,
      notNull: c.nn !== 0n,
      defaultSql: c.dflt,
      pkIndex: Number(c.pk),
      hidden: Number(c.hidden),
    }));
  const keyColumns = columns
    .filter((c) => c.pkIndex > 0)
    .sort((a, b) => a.pkIndex - b.pkIndex)
    .map((c) => c.name);
  const withoutRowid = row.wr !== 0n;
  const first = columns.find((c) => c.pkIndex === 1);
  const rowidAlias =
    !withoutRowid && keyColumns.length === 1 && first !== undefined && first.type.toUpperCase() === 'INTEGER' && !isDescIpk(db, row.name);
  const sqlRow = db
    .prepare('SELECT sql FROM main.sqlite_schema WHERE type = ? AND name = ?')
    .get(row.type === 'view' ? 'view' : 'table', row.name) as { sql: string | null } | undefined;
  return {
    name: row.name,
    kind: row.type as ObjectKind,
    withoutRowid,
    strict: row.strict !== 0n,
    columns,
    keyColumns,
    rowidAlias,
    sql: sqlRow?.sql ?? null,
  };
}

// `INTEGER PRIMARY KEY DESC` is not a rowid alias: it gets an automatic index instead.
function isDescIpk(db: Db, table: string): boolean {
  const idx = db.prepare("SELECT name FROM main.pragma_index_list(?, 'main') WHERE origin = 'pk'").all(table);
  return idx.length > 0;
}

export function foreignKeys(db: Db, table: string): ForeignKeyInfo[] {
  const rows = db
    .prepare(`SELECT id, "table" AS tbl, "from" AS src, "to" AS dst, on_update, on_delete FROM main.pragma_foreign_key_list(?, 'main')`)
    .all(table) as { id: bigint; tbl: string; src: string; dst: string | null; on_update: string; on_delete: string }[];
  return rows.map((r) => ({ id: Number(r.id), table: r.tbl, from: r.src, to: r.dst, onUpdate: r.on_update, onDelete: r.on_delete }));
}

/** Every ordinary table in main (not views, not virtual, not sqlite_ internals). */
export function listTables(db: Db): string[] {
  const rows = db
    .prepare(
      "SELECT name FROM main.pragma_table_list() WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    )
    .all() as { name: string }[];
  return rows.map((r) => r.name);
}

/**
 * A stable digest of a table's shape: columns (name, declared type, not-null,
 * default, key position, generated), WITHOUT ROWID and STRICT. Any ALTER that
 * changes what an image holds changes it.
 */
export function schemaFingerprint(info: TableInfo): string {
  const shape = {
    name: info.name,
    withoutRowid: info.withoutRowid,
    strict: info.strict,
    columns: info.columns.map((c) => [c.name, c.type, c.notNull, c.defaultSql, c.pkIndex, c.hidden]),
    sql: info.sql,
  };
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 16);
}

/** The file SQLite opened as schema `schema` of `db` ('' for a temporary or in-memory database). */
export function databaseFile(db: Db, schema: string): string {
  return (db.prepare('SELECT file FROM pragma_database_list WHERE name = ?').pluck().get(schema) as string | undefined) ?? '';
}

/** main's PRAGMA schema_version (the plain pragma: about half the time of the pragma_schema_version() table, read by a follower twice a pass). */
export function schemaVersion(db: Db, schema = 'main'): number {
  return Number(
    cachedStatement(db, `PRAGMA ${schema === 'main' ? 'main' : quoteIdent(schema)}.schema_version`, 'pluck').get() as number | bigint,
  );
}

export interface UniqueIndexInfo {
  readonly name: string;
  readonly columns: readonly { readonly name: string; readonly collate: string }[];
  /** A partial index (CREATE UNIQUE INDEX ... WHERE): only rows matching its predicate conflict. */
  readonly partial: boolean;
}

interface UniqueListing {
  readonly plain: UniqueIndexInfo[];
  /** Names of UNIQUE indexes over an expression (not only plain columns). */
  readonly expression: string[];
}

function listUniques(db: Db, table: string): UniqueListing {
  const list = db.prepare('SELECT name, origin, partial FROM main.pragma_index_list(?, \'main\') WHERE "unique" = 1').all(table) as {
    name: string;
    origin: string;
    partial: bigint;
  }[];
  const plain: UniqueIndexInfo[] = [];
  const expression: string[] = [];
  for (const idx of list) {
    if (idx.origin === 'pk') continue;
    const cols = db
      .prepare("SELECT cid, name, coll FROM main.pragma_index_xinfo(?, 'main') WHERE key = 1 ORDER BY seqno")
      .all(idx.name) as { cid: bigint; name: string | null; coll: string }[];
    if (cols.some((c) => c.cid < 0n || c.name === null)) expression.push(idx.name);
    else
      plain.push({ name: idx.name, columns: cols.map((c) => ({ name: c.name as string, collate: c.coll })), partial: idx.partial !== 0n });
  }
  return { plain, expression };
}

/**
 * UNIQUE constraints and unique indexes other than the primary key, over
 * plain columns, partial ones included. REPLACE conflicts on these delete
 * other rows.
 */
export function uniqueIndexes(db: Db, table: string): UniqueIndexInfo[] {
  return listUniques(db, table).plain;
}

/**
 * UNIQUE indexes over expressions (`CREATE UNIQUE INDEX ... ON t(lower(email))`).
 * A REPLACE through one deletes a row that no trigger can look up without
 * evaluating the expression, so capture refuses such tables.
 */
export function expressionUniqueIndexes(db: Db, table: string): string[] {
  return listUniques(db, table).expression;
}

/**
 * The collation of each primary key column as the key's own index compares
 * it, where the key has an index (not an INTEGER PRIMARY KEY): it may differ
 * from the column's declared collation (`PRIMARY KEY (name COLLATE BINARY)`
 * on a NOCASE column).
 */
export function primaryKeyCollations(db: Db, table: string): Map<string, string> {
  const out = new Map<string, string>();
  // (Cached: a protected rebuild asks for every chunk it copies.)
  const idx = cachedStatement(db, "SELECT name FROM main.pragma_index_list(?, 'main') WHERE origin = 'pk'", 'pluck').get(table) as
    string | undefined;
  if (idx === undefined) return out;
  for (const c of cachedStatement(db, "SELECT name, coll FROM main.pragma_index_xinfo(?, 'main') WHERE key = 1 AND cid >= 0").all(idx) as {
    name: string;
    coll: string;
  }[])
    out.set(c.name, c.coll);
  return out;
}
