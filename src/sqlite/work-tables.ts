import { createHash } from 'node:crypto';
import type { Db } from './connection.ts';
import { quoteIdent } from './quote.ts';
import { cachedStatement } from './statement-cache.ts';
import { connectionState, slot } from './connection-state.ts';

/*
 * TEMP tables that the apply paths work in (a batch's net transitions, a
 * map's typed images). Making and dropping them for every batch changed the
 * connection's schema each time, which threw away every compiled statement:
 * a follower spent most of a one-event batch compiling. A work table is made
 * once per connection and shape, and is empty between uses (emptied when
 * handed out and after each batch, so that the pages a large batch used go
 * back to the TEMP database for the next table, whatever its shape: TEMP
 * memory is the largest batch's, not the sum over projections). Its name
 * carries a digest of its columns, so projections with different keys each
 * have their own, and a table made in a transaction that rolled back is made
 * again on its next use.
 */

/** The names of the work tables this connection made. */
const made = slot('work-tables', () => new Set<string>());

function exists(db: Db, name: string): boolean {
  return cachedStatement(db, "SELECT 1 FROM temp.sqlite_schema WHERE type = 'table' AND name = ?", 'pluck').get(name) !== undefined;
}

/**
 * `temp.<base>_<digest>`, existing and empty, with exactly these column
 * definitions. Empty because every user empties the tables after its batch
 * (emptyWorkTables, in a finally), and a rollback restores them as they were
 * before it, empty.
 */
export function workTable(db: Db, base: string, columns: string, options: { readonly withoutRowid?: boolean } = {}): string {
  const ddl = ddlOf(columns, options);
  const name = workTableName(base, columns, options);
  const qualified = `temp.${quoteIdent(name)}`;
  if (!exists(db, name)) db.exec(`CREATE TEMP TABLE ${quoteIdent(name)} ${ddl}`);
  connectionState(db).get(made).add(name);
  return qualified;
}

/** Digests of the work tables' column definitions (a follower names its work tables for every batch). */
const digests = new Map<string, string>();

/** The (unqualified, temp) name of workTable(db, base, columns, options). */
export function workTableName(base: string, columns: string, options: { readonly withoutRowid?: boolean } = {}): string {
  const ddl = ddlOf(columns, options);
  let digest = digests.get(ddl);
  if (digest === undefined) {
    digest = createHash('sha256').update(ddl).digest('hex').slice(0, 12);
    if (digests.size >= 1024) digests.clear();
    digests.set(ddl, digest);
  }
  return `${base}_${digest}`;
}

function ddlOf(columns: string, options: { readonly withoutRowid?: boolean }): string {
  return `(${columns})${options.withoutRowid === true ? ' WITHOUT ROWID' : ''}`;
}

/** Empties every work table of this connection (after a batch; any that a rollback took away is skipped). */
export function emptyWorkTables(db: Db): void {
  for (const name of connectionState(db).peek(made) ?? []) {
    if (exists(db, name)) cachedStatement(db, `DELETE FROM temp.${quoteIdent(name)}`).run();
  }
}

/** Drops every work table of this connection (after an error: its transaction may have made some of them). */
export function dropWorkTables(db: Db): void {
  const names = connectionState(db).peek(made);
  if (names === undefined) return;
  for (const name of names) db.exec(`DROP TABLE IF EXISTS temp.${quoteIdent(name)}`);
  names.clear();
}
