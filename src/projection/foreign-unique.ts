import type { Db } from '../sqlite/index.ts';
import { cachedStatement, foldIdent, quoteIdent } from '../sqlite/index.ts';

/*
 * UNIQUE indexes that a user added to a projection's tables. sluice makes
 * none with CREATE INDEX (its keys and UNIQUE constraints have indexes of
 * origin 'pk' and 'u'), so one of origin 'c' is the user's. With one on a
 * mirror or map table the writes must not be INSERT OR REPLACE, which would
 * delete whatever row the index says conflicts, without a word: every
 * changed key is deleted first and the rows inserted plainly, so that only
 * a conflict of the batch's end state fails (SQLITE_CONSTRAINT_UNIQUE, which
 * suspends the projection with TARGET_CONSTRAINT), never a passing one
 * between keys. On an fts5 projection's tables sluice refuses one outright
 * (see step.ts): it updates the key table in place, and FTS5 writes its own
 * tables with REPLACE.
 */

export function hasForeignUniqueIndex(db: Db, schema: string, table: string): boolean {
  return foreignUniqueIndexOf(db, schema, [table]) !== undefined;
}

/**
 * The first of `tables` with such an index, in one lookup: sqlite_schema
 * keeps the SQL of every CREATE INDEX, normalized to begin with `CREATE
 * UNIQUE INDEX ` for a unique one; the indexes of keys and constraints have
 * none.
 */
export function foreignUniqueIndexOf(db: Db, schema: string, tables: readonly string[]): string | undefined {
  if (tables.length === 0) return undefined;
  const found = cachedStatement(
    db,
    `SELECT tbl_name FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'index' AND sql LIKE 'CREATE UNIQUE INDEX %' AND tbl_name COLLATE NOCASE IN (${tables.map(() => '?').join(', ')})`,
    'pluck',
  ).all(...tables) as string[];
  return tables.find((t) => found.some((f) => foldIdent(f) === foldIdent(t)));
}

/** Why an fts5 projection refuses a UNIQUE index a user added to `table`, and what to do. */
export function ftsUniqueMessage(table: string): string {
  return `The fts5 table ${table} has a UNIQUE index sluice did not make; sluice updates its key table in place and FTS5 writes its own tables with REPLACE, so such an index can refuse a batch or silently delete rows. Drop the index (index the source table instead), then sync or import again.`;
}
