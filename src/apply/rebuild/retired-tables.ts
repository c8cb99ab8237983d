import { randomBytes } from 'node:crypto';
import type { Db } from '../../sqlite/index.ts';
import { quoteIdent, renameTable, cachedStatement } from '../../sqlite/index.ts';

/*
 * The tables a protected rebuild's swap replaced (the old projection's, and
 * a replay kind's staged copy), retired rather than dropped in the swap's
 * transaction. Dropping a table walks and frees every page of it, with the
 * target's write lock held: for a projection of a million rows, longer
 * than any step of the build. So the swap renames them out of the way
 * (cheap, and atomic with the shadow renamed in: readers see the old
 * projection or the new one), and each is dropped afterwards in a write
 * transaction of its own (apply/sync/retired-drop.ts). The name is the
 * record: a table named RETIRED_PREFIX and 16 hex digits belongs to no
 * projection, and a run that finds one after a crash drops it.
 */

/** The names of retired tables: this, then 16 hex digits (an FTS5 index's own tables add their suffixes to it). */
export const RETIRED_PREFIX = '_sluice_retired_';
const RETIRED_GLOB = `${RETIRED_PREFIX}${'[0-9a-f]'.repeat(16)}`;

/**
 * In the caller's transaction: renames each of `tables` that exists to a
 * retired name, after dropping its triggers (a guard of `sluice protect`
 * is named by its table: made again on the new table, it would clash) and
 * the indexes in `indexes` (the user's, made again on the new tables by
 * the same names). The tables' rows stay where they are until
 * dropRetired drops them.
 */
export function retireTables(db: Db, schema: string, tables: readonly string[], indexes: readonly { readonly name: string }[]): void {
  const s = quoteIdent(schema);
  for (const ix of indexes) db.exec(`DROP INDEX IF EXISTS ${s}.${quoteIdent(ix.name)}`);
  for (const t of tables) {
    const there = db.prepare(`SELECT name FROM ${s}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`).pluck().get(t) as
      string | undefined;
    if (there === undefined) continue;
    const triggers = db
      .prepare(`SELECT name FROM ${s}.sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE`)
      .pluck()
      .all(there) as string[];
    for (const tr of triggers) db.exec(`DROP TRIGGER IF EXISTS ${s}.${quoteIdent(tr)}`);
    renameTable(db, schema, there, `${RETIRED_PREFIX}${randomBytes(8).toString('hex')}`);
  }
}

/** The retired table to drop next, if any (an FTS5 index's own tables, named after it, go with it and are not listed). */
export function nextRetired(db: Db, schema: string): string | undefined {
  return cachedStatement(
    db,
    `SELECT name FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name GLOB '${RETIRED_GLOB}' ORDER BY name LIMIT 1`,
    'pluck',
  ).get() as string | undefined;
}

/** In the caller's transaction: drops the next retired table (nextRetired); whether there was one. */
export function dropRetired(db: Db, schema: string): boolean {
  const name = nextRetired(db, schema);
  if (name === undefined) return false;
  db.exec(`DROP TABLE ${quoteIdent(schema)}.${quoteIdent(name)}`);
  return true;
}
