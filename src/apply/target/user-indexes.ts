import type { Db } from '../../sqlite/index.ts';
import { quoteIdent } from '../../sqlite/index.ts';
import { errorCode } from '../../errors.ts';

/*
 * Indexes a user added to a projection's tables, for their own queries.
 * sluice makes no named index on its target tables (only UNIQUE/PRIMARY KEY
 * constraints, whose automatic indexes have no SQL), so every index with SQL
 * on an owned table, or on the shadow tables of an owned FTS5 table, is the
 * user's. A rebuild drops and makes the tables again; these are made again
 * on the new tables, in the same transaction, so a rebuild never silently
 * takes them away.
 */

export interface UserIndex {
  readonly name: string;
  readonly table: string;
  /** As stored in sqlite_schema: `CREATE [UNIQUE] INDEX <name> ON ...`, schema prefix and IF NOT EXISTS removed. */
  readonly sql: string;
}

/** A user's index that could not be made again on the rebuilt table, and why. */
export interface DroppedIndex {
  readonly name: string;
  readonly table: string;
  readonly why: string;
}

/** The tables FTS5 makes for a virtual table `t` (dropped with it). */
const FTS5_SHADOWS = ['_data', '_idx', '_content', '_docsize', '_config'] as const;

export function userIndexes(db: Db, schema: string, tables: readonly string[]): UserIndex[] {
  if (tables.length === 0) return [];
  const stmt = db.prepare(
    `SELECT name, tbl_name AS "table", sql FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND tbl_name = ? COLLATE NOCASE ORDER BY name`,
  );
  return withFts5Shadows(db, schema, tables).flatMap((t) => stmt.all(t) as UserIndex[]);
}

/** `tables`, each FTS5 table among them followed by the tables FTS5 made for it (which a user may index, or put triggers on). */
export function withFts5Shadows(db: Db, schema: string, tables: readonly string[]): string[] {
  const isFts5 = db
    .prepare(
      `SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'`,
    )
    .pluck();
  return tables.flatMap((t) => (isFts5.get(t) === undefined ? [t] : [t, ...FTS5_SHADOWS.map((x) => `${t}${x}`)]));
}

/**
 * Makes each index again in `schema`, in the caller's transaction. One that
 * no longer fits (a column the new definition dropped: SQLITE_ERROR; a
 * UNIQUE index the snapshot's rows break) is left out and returned: a
 * failed CREATE INDEX undoes only itself. Any other failure (disk full, I/O)
 * is thrown, so the rebuild rolls back and keeps the index.
 */
export function restoreIndexes(db: Db, schema: string, indexes: readonly UserIndex[]): DroppedIndex[] {
  const dropped: DroppedIndex[] = [];
  for (const ix of indexes) {
    const m = /^CREATE (UNIQUE )?INDEX /.exec(ix.sql);
    if (m === null) {
      dropped.push({ name: ix.name, table: ix.table, why: `its SQL is not a CREATE INDEX statement sluice can replay: ${ix.sql}` });
      continue;
    }
    // prepare() takes exactly one statement: SQL read from the target file
    // never runs anything but this CREATE INDEX, in the target schema.
    let stmt: { run(): unknown };
    try {
      stmt = db.prepare(`CREATE ${m[1] ?? ''}INDEX ${quoteIdent(schema)}.${ix.sql.slice(m[0].length)}`);
    } catch (err) {
      if (!isNoLongerFits(err)) throw err;
      dropped.push({ name: ix.name, table: ix.table, why: (err as Error).message });
      continue;
    }
    try {
      stmt.run();
    } catch (err) {
      if (!isNoLongerFits(err) || !db.inTransaction) throw err;
      dropped.push({ name: ix.name, table: ix.table, why: (err as Error).message });
    }
  }
  return dropped;
}

/** A column or table the index names is gone (SQLITE_ERROR), or the rows break a UNIQUE index; more than one statement is refused as such too. */
function isNoLongerFits(err: unknown): boolean {
  const code = errorCode(err);
  return code === 'SQLITE_ERROR' || code === 'SQLITE_CONSTRAINT_UNIQUE' || err instanceof RangeError;
}
