import { randomBytes } from 'node:crypto';
import type { Db } from '../../sqlite/index.ts';
import { quoteIdent, renameTable, cachedStatement, scrubbing } from '../../sqlite/index.ts';

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
 *
 * Tables that may hold a column the source has left out of capture since
 * (the rebuild is the one that takes it out) are retired as SCRUB_PREFIX
 * and 16 hex digits instead: their drop zeroes every page it frees and
 * the commit checkpoints the target (sqlite/scrub.ts), as the user's
 * indexes on them are dropped in the swap. Every other drop is plain.
 */

/** The names of retired tables: this, then 16 hex digits (an FTS5 index's own tables add their suffixes to it). */
export const RETIRED_PREFIX = '_sluice_retired_';
/** The names of retired tables whose drop is scrubbed: this, then 16 hex digits. */
export const SCRUB_PREFIX = '_sluice_retired_scrub_';
const HEX16 = '[0-9a-f]'.repeat(16);
const RETIRED_GLOB = `${RETIRED_PREFIX}${HEX16}`;
const SCRUB_GLOB = `${SCRUB_PREFIX}${HEX16}`;

/**
 * In the caller's transaction: renames each of `tables` that exists to a
 * retired name, after dropping its triggers (a guard of `sluice protect`
 * is named by its table: made again on the new table, it would clash) and
 * the indexes in `indexes` (the user's, made again on the new tables by
 * the same names). The tables' rows stay where they are until
 * dropRetired drops them. `scrub`: they may hold a column left out of
 * capture since (the indexes are dropped scrubbed, the tables named so).
 */
export function retireTables(
  db: Db,
  schema: string,
  tables: readonly string[],
  indexes: readonly { readonly name: string }[],
  scrub = false,
): void {
  const s = quoteIdent(schema);
  const dropIndexes = () => {
    for (const ix of indexes) db.exec(`DROP INDEX IF EXISTS ${s}.${quoteIdent(ix.name)}`);
  };
  if (scrub) scrubbing(db, schema, dropIndexes);
  else dropIndexes();
  for (const t of tables) {
    const there = db.prepare(`SELECT name FROM ${s}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`).pluck().get(t) as
      string | undefined;
    if (there === undefined) continue;
    const triggers = db
      .prepare(`SELECT name FROM ${s}.sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE`)
      .pluck()
      .all(there) as string[];
    for (const tr of triggers) db.exec(`DROP TRIGGER IF EXISTS ${s}.${quoteIdent(tr)}`);
    renameTable(db, schema, there, `${scrub ? SCRUB_PREFIX : RETIRED_PREFIX}${randomBytes(8).toString('hex')}`);
  }
}

/** The retired table to drop next, if any (an FTS5 index's own tables, named after it, go with it and are not listed). */
export function nextRetired(db: Db, schema: string): string | undefined {
  return cachedStatement(
    db,
    `SELECT name FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND (name GLOB '${RETIRED_GLOB}' OR name GLOB '${SCRUB_GLOB}') ORDER BY name LIMIT 1`,
    'pluck',
  ).get() as string | undefined;
}

/** In the caller's transaction: drops the next retired table (nextRetired), scrubbed when it is named so; whether there was one. */
export function dropRetired(db: Db, schema: string): boolean {
  const name = nextRetired(db, schema);
  if (name === undefined) return false;
  const drop = () => db.exec(`DROP TABLE ${quoteIdent(schema)}.${quoteIdent(name)}`);
  if (name.startsWith(SCRUB_PREFIX)) scrubbing(db, schema, drop);
  else drop();
  return true;
}
