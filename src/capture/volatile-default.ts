import type { Db, TableInfo, UniqueIndexInfo } from '../sqlite/index.ts';
import { foldIdent, quoteIdent } from '../sqlite/index.ts';
import { CaptureRefusedError } from '../errors.ts';
import { defaultExpression } from './replace-guards.ts';

/*
 * Under REPLACE (the statement's, or the column's own ON CONFLICT), a NULL
 * written to a NOT NULL column with a DEFAULT takes the default after the
 * BEFORE triggers ran, and the row that value collides with on the key or
 * a UNIQUE index is deleted. The REPLACE guard looks up
 * coalesce(NEW.col, <default>) in its place (replace-guards.ts), which is
 * the value SQLite writes only when the default is the same each time it is
 * computed in one statement. A DEFAULT that is not (random(), randomblob(),
 * changes(), a function the application registers, which sluice cannot
 * call or know) draws another value in the guard: the row the write deletes
 * is not noted, its delete is never journaled, and downstream copies keep
 * it. So such a column, when it is in the key or a UNIQUE index, is refused
 * at enable, and a captured table that comes to have one (CREATE UNIQUE
 * INDEX over it, a rebuild) is unarmed (UNIQUE_VOLATILE_DEFAULT).
 *
 * Which defaults are the same each time is SQLite's own rule, so it is
 * asked, never imitated: the expression is compiled (never run) as a
 * generated column of a TEMP table, which SQLite refuses when it calls a
 * function it does not mark deterministic, or one it does not know. The
 * time functions reading 'now' are taken: SQLite gives every call of them
 * in one sqlite3_step() the same time, the guard's included, so they are
 * exact here. CURRENT_TIME, CURRENT_DATE and CURRENT_TIMESTAMP are the same
 * time functions (time('now'), date('now'), datetime('now')), but SQLite
 * refuses those keywords in a generated column: they are compiled as those
 * functions. A random id of 16 bytes or more is taken too (UNIQUE_RANDOM_BYTES).
 */

/** A key or UNIQUE column whose DEFAULT the REPLACE guard cannot compute as SQLite will. */
export interface VolatileDefault {
  readonly column: string;
  /** Its DEFAULT, as SQLite stores it (pragma_table_info's dflt_value). */
  readonly defaultSql: string;
  /** The UNIQUE index it is in, or undefined for the primary key. */
  readonly index: string | undefined;
  /** Why SQLite would not compute it the same each time, in words. */
  readonly why: string;
}

const PROBE = '_sluice_default_probe';

const TIME_KEYWORDS: Record<string, string> = {
  current_time: "time('now')",
  current_date: "date('now')",
  current_timestamp: "datetime('now')",
};

/**
 * The fewest random bytes a DEFAULT of randomblob() alone (or its hex, in
 * either case: the usual random id, lower(hex(randomblob(16)))) draws to be
 * taken: two draws of 16 bytes or more are never the same in practice (a
 * table of 10^12 rows holds a given value with a chance below 10^-26), so
 * the value SQLite writes in place of a NULL collides with no row, deletes
 * nothing, and the guard's own draw, which collides with none either, notes
 * nothing: what the triggers journal is what happened. Fewer bytes, or any
 * other expression around them (substr, a modulo), may collide: refused.
 */
const UNIQUE_RANDOM_BYTES = 16;

const RANDOM_ID_SHAPES = [/^randomblob\((\d+)\)$/, /^hex\(randomblob\((\d+)\)\)$/, /^(?:lower|upper)\(hex\(randomblob\((\d+)\)\)\)$/];

/** Whether `expr` is a random id of at least UNIQUE_RANDOM_BYTES bytes (one of RANDOM_ID_SHAPES, spaces and case aside). */
function randomId(expr: string): boolean {
  let e = expr.replace(/\s+/g, '').toLowerCase();
  while (e.startsWith('(') && e.endsWith(')') && balancedInside(e)) e = e.slice(1, -1);
  const n = RANDOM_ID_SHAPES.map((re) => re.exec(e)?.[1]).find((m) => m !== undefined);
  return n !== undefined && Number(n) >= UNIQUE_RANDOM_BYTES;
}

/** Whether the outer parentheses of `e` enclose all of it (not `(a)||(b)`). */
function balancedInside(e: string): boolean {
  let depth = 0;
  for (let i = 0; i < e.length - 1; i++) {
    if (e[i] === '(') depth++;
    else if (e[i] === ')') depth--;
    if (depth === 0) return false;
  }
  return true;
}

/** Why the expression `expr` may be another value each time SQLite computes it in a statement, or undefined when it is one value. Compiles only. */
function notStable(db: Db, expr: string): string | undefined {
  if (randomId(expr)) return undefined;
  const probe = expr.replace(/'(?:[^']|'')*'|\bcurrent_(?:timestamp|time|date)\b/gi, (m) =>
    m.startsWith("'") ? m : (TIME_KEYWORDS[m.toLowerCase()] as string),
  );
  try {
    db.prepare(`CREATE TEMP TABLE ${PROBE} (x, y AS (${probe}))`);
    return undefined;
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (/non-deterministic/i.test(message)) return 'it calls a function SQLite does not mark deterministic, such as random()';
    const fn = /no such function: (\S+)/i.exec(message);
    if (fn !== null)
      return `it calls ${fn[1]}(), a function the application registers, which sluice can neither call nor know to give the same value each time`;
    return `SQLite cannot compute it outside the table (${message})`;
  }
}

/**
 * The first column of `info`'s key (unless it is the rowid) or of one of
 * its UNIQUE indexes (`uniques`, partial ones included) that is NOT NULL
 * with a DEFAULT SQLite may compute as another value each time. Compiles
 * statements only: writes nothing.
 */
export function volatileDefault(db: Db, info: TableInfo, uniques: readonly UniqueIndexInfo[]): VolatileDefault | undefined {
  const constraints: { index: string | undefined; columns: readonly string[] }[] = [
    { index: undefined, columns: info.rowidAlias ? [] : info.keyColumns },
    ...uniques.map((u) => ({ index: u.name, columns: u.columns.map((c) => c.name) })),
  ];
  const checked = new Map<string, string | undefined>();
  for (const c of constraints) {
    for (const name of c.columns) {
      const col = info.columns.find((x) => foldIdent(x.name) === foldIdent(name));
      if (col === undefined || !col.notNull || col.hidden !== 0 || col.defaultSql === null) continue;
      const expr = defaultExpression(col.defaultSql);
      if (expr === undefined) continue;
      const key = foldIdent(col.name);
      if (!checked.has(key)) checked.set(key, notStable(db, expr));
      const why = checked.get(key);
      if (why !== undefined) return { column: col.name, defaultSql: col.defaultSql, index: c.index, why };
    }
  }
  return undefined;
}

function where(found: VolatileDefault): string {
  return found.index === undefined ? 'its PRIMARY KEY' : `the UNIQUE index ${found.index}`;
}

/** Why such a column is refused, naming the table, column, default and constraint (the unarmed detail, and the refusal's start). */
export function volatileDefaultDetail(table: string, found: VolatileDefault): string {
  return `column ${found.column} is NOT NULL with DEFAULT (${found.defaultSql}), which SQLite may compute as another value each time (${found.why}), and it is in ${where(found)}. An INSERT or UPDATE OR REPLACE that writes NULL to ${found.column} gets the default only after sluice's triggers ran, and the value they compute in its place may be another one, so they cannot tell which row of ${table} the write replaces through ${where(found)}, and that row's delete would be lost downstream`;
}

/** How to change the table so enable takes it. */
export function volatileDefaultFix(table: string, found: VolatileDefault): string {
  const dropIndex =
    found.index === undefined
      ? ''
      : found.index.startsWith('sqlite_autoindex_')
        ? `drop the UNIQUE constraint on ${found.column}, `
        : `drop the UNIQUE index ${found.index} (DROP INDEX ${quoteIdent(found.index)}), `;
  return `drop the NOT NULL of ${found.column} (a NULL written then stays NULL), give it a DEFAULT of constants and deterministic functions (or none; the application then writes its values), ${dropIndex}or do not capture ${table}`;
}

/** The refusal of such a table at enable. */
export function volatileDefaultError(table: string, found: VolatileDefault): CaptureRefusedError {
  return new CaptureRefusedError(
    'UNIQUE_VOLATILE_DEFAULT',
    table,
    `Table ${table}: ${volatileDefaultDetail(table, found)}. Fix: ${volatileDefaultFix(table, found)}.`,
  );
}
