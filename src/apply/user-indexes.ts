import type { Db } from '../sqlite/connection.ts';
import { quoteIdent } from '../sqlite/quote.ts';

/*
 * Indexes a user added to a projection's tables, for their own queries.
 * sluice makes no named index on its target tables (only UNIQUE/PRIMARY KEY
 * constraints, whose automatic indexes have no SQL), so every index with SQL
 * on an owned table is the user's. A rebuild drops and makes the tables
 * again; these are made again on the new tables, in the same transaction,
 * so a rebuild never silently takes them away.
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

export function userIndexes(db: Db, schema: string, tables: readonly string[]): UserIndex[] {
  if (tables.length === 0) return [];
  const stmt = db.prepare(`SELECT name, tbl_name AS "table", sql FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND tbl_name = ? COLLATE NOCASE ORDER BY name`);
  return tables.flatMap((t) => stmt.all(t) as UserIndex[]);
}

/**
 * Makes each index again in `schema`, in the caller's transaction. One that
 * no longer fits (a column the new definition dropped, a UNIQUE index the
 * snapshot's rows break) is left out and returned: a failed CREATE INDEX
 * undoes only itself.
 */
export function restoreIndexes(db: Db, schema: string, indexes: readonly UserIndex[]): DroppedIndex[] {
  const dropped: DroppedIndex[] = [];
  for (const ix of indexes) {
    const m = /^CREATE (UNIQUE )?INDEX /.exec(ix.sql);
    if (m === null) {
      dropped.push({ name: ix.name, table: ix.table, why: `its SQL is not a CREATE INDEX statement sluice can replay: ${ix.sql}` });
      continue;
    }
    try {
      db.exec(`CREATE ${m[1] ?? ''}INDEX ${quoteIdent(schema)}.${ix.sql.slice(m[0].length)}`);
    } catch (err) {
      dropped.push({ name: ix.name, table: ix.table, why: err instanceof Error ? err.message : String(err) });
    }
  }
  return dropped;
}
