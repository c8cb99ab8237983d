import { type Db, quoteIdent, cachedStatement } from '../../sqlite/index.ts';
import { createHash } from 'node:crypto';

/*
 * What `sluice protect` leaves in a target (apply/edits/protect.ts makes
 * and drops them): the marker table that says the target is protected, and
 * per guarded table three BEFORE triggers named from the table's name.
 * Here, below both, so that health can see a guard another program dropped.
 */

export const PROTECTED_TABLE = '_sluice_protected';
export const GUARD_PREFIX = '_sluice_protect_';
/** Each guard trigger's name suffix, and the write it refuses. */
export const GUARD_OPS = { i: 'INSERT', u: 'UPDATE', d: 'DELETE' } as const;

/** The guard trigger of `table` for the write `suffix` (a key of GUARD_OPS). */
export function guardName(table: string, suffix: string): string {
  return `${GUARD_PREFIX}${createHash('sha256').update(table.toLowerCase()).digest('hex').slice(0, 16)}_${suffix}`;
}

/** Whether the target is protected (the marker table is there). */
export function isProtected(db: Db, schema: string): boolean {
  return (
    cachedStatement(db, `SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ?`).get(PROTECTED_TABLE) !==
    undefined
  );
}

/**
 * In a protected target: which of `tables` (a projection's) that can carry
 * triggers (plain tables) lost guard triggers (another program dropped
 * them, a schema tool dropping the triggers it does not know), with the
 * triggers missing. Writes outside sluice to such a table are accepted
 * again. Reads only.
 */
export function missingGuards(db: Db, schema: string, tables: readonly string[]): { table: string; triggers: string[] }[] {
  if (!isProtected(db, schema)) return [];
  const s = quoteIdent(schema);
  const type = cachedStatement(db, `SELECT type FROM ${s}.pragma_table_list WHERE name = ? COLLATE NOCASE`, 'pluck');
  const has = cachedStatement(db, `SELECT 1 FROM ${s}.sqlite_schema WHERE type = 'trigger' AND name = ?`);
  return tables.flatMap((table) => {
    if (type.get(table) !== 'table') return [];
    const triggers = Object.keys(GUARD_OPS)
      .map((suffix) => guardName(table, suffix))
      .filter((name) => has.get(name) === undefined);
    return triggers.length === 0 ? [] : [{ table, triggers }];
  });
}
