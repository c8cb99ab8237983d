import type { TableInfo, UniqueIndexInfo } from '../sqlite/index.ts';
import { columnDefinitionNames, foldIdent } from '../sqlite/index.ts';
import { CaptureRefusedError } from '../errors.ts';

/*
 * A UNIQUE index over a generated column computed from the INTEGER PRIMARY
 * KEY (`slot INT AS (id % 3) UNIQUE`, a ring buffer). An INSERT that leaves
 * the key to SQLite gets its rowid only after the BEFORE triggers ran: there
 * NEW.id is -1, and the generated column is computed from -1, so the REPLACE
 * guard looks up the wrong value and the row the insert deletes through the
 * index is journaled by no one. The rowid SQLite will assign cannot be known
 * in a trigger in every case (a random one once the largest rowid is
 * 2^63-1; AUTOINCREMENT's counter, held in a register for the statement; a
 * user trigger that writes the table first), so such a table is refused, as
 * one with a UNIQUE index over an expression is. An UPDATE cannot leave the
 * key to SQLite (SET id = NULL is a datatype mismatch): its NEW is exact.
 * A table whose key is not the rowid is not concerned (its key is given, or
 * is NULL in the BEFORE trigger and in the row alike).
 */

/** What makes a table's UNIQUE index one a REPLACE guard cannot follow: the index, its generated column, and the key it is computed from. */
export interface UniqueFromRowid {
  readonly index: string;
  readonly column: string;
  readonly key: string;
}

/**
 * The first UNIQUE index (of `uniques`, the table's plain ones) over a
 * generated column computed from the INTEGER PRIMARY KEY of `info`,
 * directly or through other generated columns. What a column reads is taken
 * from its definition in the CREATE TABLE text, every name it mentions
 * counting (columnDefinitionNames): a doubt makes a column a reader, never
 * the other way round.
 */
export function uniqueFromRowid(info: TableInfo, uniques: readonly UniqueIndexInfo[]): UniqueFromRowid | undefined {
  const key = info.keyColumns[0];
  if (!info.rowidAlias || key === undefined) return undefined;
  const generated = info.columns.filter((c) => c.hidden === 2 || c.hidden === 3);
  if (generated.length === 0) return undefined;
  const defs = new Map([...columnDefinitionNames(info.sql ?? '')].map(([k, v]) => [foldIdent(k), v]));
  const fromKey = new Set([foldIdent(key)]);
  for (let grew = true; grew;) {
    grew = false;
    for (const c of generated) {
      if (fromKey.has(foldIdent(c.name))) continue;
      const names = defs.get(foldIdent(c.name));
      if (names !== undefined && !names.some((n) => fromKey.has(foldIdent(n)))) continue;
      fromKey.add(foldIdent(c.name));
      grew = true;
    }
  }
  const isGenerated = new Set(generated.map((c) => foldIdent(c.name)));
  for (const u of uniques) {
    const col = u.columns.find((c) => isGenerated.has(foldIdent(c.name)) && fromKey.has(foldIdent(c.name)));
    if (col !== undefined) return { index: u.name, column: col.name, key };
  }
  return undefined;
}

/** Why such an index is refused, in a sentence naming the table, index, column and key (the unarmed detail, and the refusal's start). */
export function uniqueFromRowidDetail(table: string, found: UniqueFromRowid): string {
  return `its UNIQUE index ${found.index} is over column ${found.column}, generated from ${found.key}, the INTEGER PRIMARY KEY (the rowid). An INSERT that leaves ${found.key} to SQLite (INSERT OR REPLACE INTO ${table} without ${found.key}) gets its rowid only after sluice's triggers ran, so they cannot tell which row it replaces through ${found.index}, and that row's delete would be lost downstream`;
}

/** The refusal of such a table at enable. */
export function uniqueFromRowidError(table: string, found: UniqueFromRowid): CaptureRefusedError {
  return new CaptureRefusedError(
    'UNIQUE_FROM_ROWID',
    table,
    `Table ${table}: ${uniqueFromRowidDetail(table, found)}. Fix: make ${found.column} an ordinary column the application writes, compute it from columns other than ${found.key}, drop the UNIQUE constraint on it, or do not capture ${table}.`,
  );
}
