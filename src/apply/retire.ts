import { createHash } from 'node:crypto';
import { quoteIdent } from '../sqlite/quote.ts';
import { cachedStatement } from '../sqlite/statement-cache.ts';
import { PROJECTIONS_TABLE, type ProjectionRecord } from './target-meta.ts';
import type { ApplyTarget } from './applier.ts';
import type { UserIndex } from './user-indexes.ts';
import { renameTable } from '../sqlite/rename.ts';

/*
 * The old state of a projection a protected rebuild swapped out is dropped
 * only after the cutover (reference 003), in bounded transactions: DROP
 * TABLE frees every page of a table in one statement, so dropping a table
 * of a million rows in the swap's own transaction held the target's write
 * lock for as long as the table is big. At the swap the old tables are
 * renamed aside (`_sluice_retired_*`, listed in the projection's row,
 * `retired`); each later step of the projection deletes up to RETIRE_CHUNK
 * of their rows, and drops a table once it is empty. A virtual table (an
 * FTS5 index) is dropped at the swap: its rows are not deletable in parts.
 */

/** Rows of a retired table deleted per transaction. */
export const RETIRE_CHUNK = 20_000;

export function retiredOf(rec: ProjectionRecord | undefined): string[] {
  return rec?.retired == null ? [] : (JSON.parse(rec.retired) as string[]);
}

function writeRetired(t: ApplyTarget, name: string, tables: readonly string[]): void {
  cachedStatement(t.db, `UPDATE ${quoteIdent(t.schema)}.${PROJECTIONS_TABLE} SET retired = ? WHERE name = ?`).run(
    tables.length === 0 ? null : JSON.stringify(tables),
    name,
  );
}

/**
 * In the swap's transaction: the old tables out of the way of the new ones.
 * The user's indexes on them go first (they are made again on the new ones,
 * under their own names); a virtual table is dropped, any other renamed
 * aside and listed for retireStep.
 */
export function retireTables(t: ApplyTarget, name: string, tables: readonly string[], indexes: readonly UserIndex[]): void {
  const { db, schema } = t;
  const s = quoteIdent(schema);
  for (const i of indexes) db.exec(`DROP INDEX IF EXISTS ${s}.${quoteIdent(i.name)}`);
  const retired = retiredOf({
    retired: cachedStatement(db, `SELECT retired FROM ${s}.${PROJECTIONS_TABLE} WHERE name = ?`, 'pluck').get(name),
  } as ProjectionRecord);
  const sqlOf = db.prepare(`SELECT sql FROM ${s}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`).pluck();
  for (const x of tables) {
    const sql = sqlOf.get(x) as string | undefined;
    if (sql === undefined) continue;
    if (/^CREATE\s+VIRTUAL\s/i.test(sql)) {
      db.exec(`DROP TABLE ${s}.${quoteIdent(x)}`);
      continue;
    }
    const aside = `_sluice_retired_${createHash('sha256').update(`${name}\0${x}\0${Date.now()}\0${retired.length}`).digest('hex').slice(0, 16)}`;
    // (renameTable leaves the views and triggers that name x as they are: they name the new table once it is renamed in.)
    renameTable(db, schema, x, aside);
    retired.push(aside);
  }
  writeRetired(t, name, retired);
}

/**
 * One bounded step of dropping a projection's retired tables, in the
 * caller's transaction: up to RETIRE_CHUNK rows of the first deleted, or it
 * dropped once empty. False when there was nothing to retire.
 */
export function retireStep(t: ApplyTarget, rec: ProjectionRecord): boolean {
  const tables = retiredOf(rec);
  const first = tables[0];
  if (first === undefined) return false;
  const { db, schema } = t;
  const x = `${quoteIdent(schema)}.${quoteIdent(first)}`;
  const exists = db.prepare(`SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ?`).get(first) !== undefined;
  const withoutRowid =
    exists &&
    db
      .prepare(`SELECT wr FROM ${quoteIdent(schema)}.pragma_table_list(?)`)
      .pluck()
      .get(first) === 1n;
  const key = withoutRowid
    ? (
        db
          .prepare(`SELECT name FROM ${quoteIdent(schema)}.pragma_table_info(?) WHERE pk > 0 ORDER BY pk`)
          .pluck()
          .all(first) as string[]
      )
        .map(quoteIdent)
        .join(', ')
    : 'rowid';
  const deleted = exists
    ? db.prepare(`DELETE FROM ${x} WHERE (${key}) IN (SELECT ${key} FROM ${x} LIMIT ${RETIRE_CHUNK})`).run().changes
    : 0;
  if (deleted < RETIRE_CHUNK) {
    db.exec(`DROP TABLE IF EXISTS ${x}`);
    writeRetired(t, rec.name, tables.slice(1));
  }
  return true;
}
