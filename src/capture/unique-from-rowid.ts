import type { TableInfo, UniqueIndexInfo } from '../sqlite/index.ts';
import { columnDefinitionNames, foldIdent, quoteIdent } from '../sqlite/index.ts';
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

/**
 * A NOT NULL column with a DEFAULT is the same case for the guard: under
 * REPLACE (the statement's, or the column's own ON CONFLICT) a NULL written
 * to it takes the default after the BEFORE triggers ran, so a generated
 * column computed from it is computed from NULL in NEW. The guard looks up
 * the default in place of a plain column (replace-guards.ts), but it cannot
 * compute a generated column's expression over it, so such a UNIQUE index
 * is refused too (UNIQUE_FROM_DEFAULT).
 */

/** What makes a table's UNIQUE index one a REPLACE guard cannot follow: the index, its generated column, and the column SQLite fills in after the triggers that it is computed from. */
export interface UniqueFromRowid {
  readonly index: string;
  readonly column: string;
  /** The INTEGER PRIMARY KEY (`by` rowid), or a NOT NULL column with a DEFAULT (`by` default). */
  readonly key: string;
  readonly by: 'rowid' | 'default';
  readonly code: 'UNIQUE_FROM_ROWID' | 'UNIQUE_FROM_DEFAULT';
}

/**
 * The first UNIQUE index (of `uniques`, the table's plain ones) over a
 * generated column computed, directly or through other generated columns,
 * from the INTEGER PRIMARY KEY of `info` or from one of its NOT NULL
 * columns with a DEFAULT. What a column reads is taken from its definition
 * in the CREATE TABLE text, every name it mentions counting
 * (columnDefinitionNames; but string literals, which an expression never
 * reads as names): a doubt makes a column a reader, never the other way
 * round.
 */
export function uniqueFromRowid(info: TableInfo, uniques: readonly UniqueIndexInfo[]): UniqueFromRowid | undefined {
  const generated = info.columns.filter((c) => c.hidden === 2 || c.hidden === 3);
  if (generated.length === 0) return undefined;
  const rowidKey = info.rowidAlias ? info.keyColumns[0] : undefined;
  const roots = new Map<string, { name: string; by: 'rowid' | 'default' }>();
  if (rowidKey !== undefined) roots.set(foldIdent(rowidKey), { name: rowidKey, by: 'rowid' });
  for (const c of info.columns)
    if (c.hidden === 0 && c.notNull && c.defaultSql !== null && !roots.has(foldIdent(c.name)))
      roots.set(foldIdent(c.name), { name: c.name, by: 'default' });
  if (roots.size === 0) return undefined;
  const defs = new Map([...columnDefinitionNames(info.sql ?? '', { literals: false })].map(([k, v]) => [foldIdent(k), v]));
  // Each generated column to the root it is computed from (the first found).
  const from = new Map<string, { name: string; by: 'rowid' | 'default' }>(roots);
  for (let grew = true; grew;) {
    grew = false;
    for (const c of generated) {
      if (from.has(foldIdent(c.name))) continue;
      const names = defs.get(foldIdent(c.name));
      // A column whose definition cannot be found reads anything: the first root.
      const hit = names === undefined ? [...roots.values()][0] : names.map((n) => from.get(foldIdent(n))).find((r) => r !== undefined);
      if (hit === undefined) continue;
      from.set(foldIdent(c.name), hit);
      grew = true;
    }
  }
  const isGenerated = new Set(generated.map((c) => foldIdent(c.name)));
  for (const u of uniques) {
    const col = u.columns.find((c) => isGenerated.has(foldIdent(c.name)) && from.has(foldIdent(c.name)));
    const root = col === undefined ? undefined : from.get(foldIdent(col.name));
    if (col !== undefined && root !== undefined)
      return {
        index: u.name,
        column: col.name,
        key: root.name,
        by: root.by,
        code: root.by === 'rowid' ? 'UNIQUE_FROM_ROWID' : 'UNIQUE_FROM_DEFAULT',
      };
  }
  return undefined;
}

/** Why such an index is refused, in a sentence naming the table, index, column and key (the unarmed detail, and the refusal's start). */
export function uniqueFromRowidDetail(table: string, found: UniqueFromRowid): string {
  if (found.by === 'default')
    return `its UNIQUE index ${found.index} is over column ${found.column}, generated from ${found.key}, a NOT NULL column with a DEFAULT. An INSERT or UPDATE OR REPLACE that writes NULL to ${found.key} gets the default only after sluice's triggers ran, so they cannot tell which row it replaces through ${found.index}, and that row's delete would be lost downstream`;
  return `its UNIQUE index ${found.index} is over column ${found.column}, generated from ${found.key}, the INTEGER PRIMARY KEY (the rowid). An INSERT that leaves ${found.key} to SQLite (INSERT OR REPLACE INTO ${table} without ${found.key}) gets its rowid only after sluice's triggers ran, so they cannot tell which row it replaces through ${found.index}, and that row's delete would be lost downstream`;
}

/**
 * How to change the table so enable takes it, in words: dropping the index
 * first when it is one made by CREATE UNIQUE INDEX (named, so it can be
 * dropped alone), else the UNIQUE constraint in the table's definition.
 */
export function uniqueFromRowidFix(table: string, found: UniqueFromRowid): string {
  const dropIndex = found.index.startsWith('sqlite_autoindex_')
    ? ''
    : `drop the UNIQUE index ${found.index} (DROP INDEX ${quoteIdent(found.index)}), `;
  return found.by === 'default'
    ? `${dropIndex}drop the DEFAULT or the NOT NULL of ${found.key}, compute ${found.column} from other columns, drop the UNIQUE constraint on it, or do not capture ${table}`
    : `${dropIndex}make ${found.column} an ordinary column the application writes, compute it from columns other than ${found.key}, drop the UNIQUE constraint on it, or do not capture ${table}`;
}

/** The refusal of such a table at enable. */
export function uniqueFromRowidError(table: string, found: UniqueFromRowid): CaptureRefusedError {
  return new CaptureRefusedError(
    found.code,
    table,
    `Table ${table}: ${uniqueFromRowidDetail(table, found)}. Fix: ${uniqueFromRowidFix(table, found)}.`,
  );
}
