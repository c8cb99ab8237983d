import type { Db } from './connection.ts';
import { quoteIdent } from './quote.ts';
import { fromDriver, toJsonValue, type JsonValue } from './codec.ts';

/** SQLite's column affinity of a declared type (the rules of section 3.1 of its datatype docs, in their order). */
export type Affinity = 'INTEGER' | 'TEXT' | 'BLOB' | 'REAL' | 'NUMERIC';

export function affinityOf(declared: string): Affinity {
  const t = declared.toUpperCase();
  if (t.includes('INT')) return 'INTEGER';
  if (t.includes('CHAR') || t.includes('CLOB') || t.includes('TEXT')) return 'TEXT';
  if (t.includes('BLOB') || t.trim() === '') return 'BLOB';
  if (t.includes('REAL') || t.includes('FLOA') || t.includes('DOUB')) return 'REAL';
  return 'NUMERIC';
}

/**
 * Whether a column of declared type `declared` can hold -0.0 as a REAL: only
 * one without affinity (BLOB or no declared type); REAL, NUMERIC and INTEGER
 * store it as 0. A STRICT table's ANY column keeps it too, but ANY is NUMERIC
 * here (as in an ordinary table): pass declaredType(column), which is no type
 * for a STRICT table's ANY.
 */
export function canHoldNegativeZero(declared: string): boolean {
  return affinityOf(declared) === 'BLOB';
}

/*
 * Values a column holds that its own declared type would store otherwise.
 * SQLite applies a column's affinity when a value is written, so a column
 * holds none, until its declaration changes without its rows being
 * written again (PRAGMA writable_schema, which SQLite documents for it):
 * then a column declared INTEGER may hold the TEXT '1' it held as TEXT, and
 * any copy of it into a table of the same declaration (a mirror, a work
 * table) stores the INTEGER 1. Which values convert is SQLite's own rule
 * (the text a number is read from, which reals become integers, and so on),
 * so it is asked, never imitated: the values that may convert (a cheap
 * filter in SQL, wider than the rule) are written into a TEMP table with
 * that affinity, and those whose class changed are the ones.
 */

/** A column's values that its declared type would store otherwise (affinityMisfits). */
export interface AffinityMisfit {
  readonly column: string;
  readonly affinity: Affinity;
  /** How many of its values. */
  readonly count: number;
  /** Their storage classes, as the column holds them ('text', 'integer', 'real'). */
  readonly classes: readonly string[];
  /** One of them: its row's key values, and the value as an SQL literal (cut at 40 characters). */
  readonly key: readonly JsonValue[];
  readonly value: string;
}

/** The characters sqlite3AtoF skips around a number. */
const BLANKS = "' ' || char(9, 10, 11, 12, 13)";

/**
 * SQL: whether `x` may be a value that affinity `a` stores in another class
 * (wider than SQLite's rule: affinityMisfits asks SQLite about each).
 * TEXT converts numbers; INTEGER and NUMERIC text that reads as a number
 * and reals that are whole; REAL text that reads as a number (an integer
 * read from a REAL column is a real already). NULL, '0' for none.
 */
function mayConvert(x: string, a: Affinity): string {
  // Only signs, digits, points, exponents (and digit separators) once the blanks, a leading sign and an exponent's sign are gone.
  const numeric = `(typeof(${x}) = 'text' AND ${x} GLOB '*[0-9]*' AND ltrim(replace(replace(lower(trim(${x}, ${BLANKS})), 'e+', 'e'), 'e-', 'e'), '+-') NOT GLOB '*[^0-9.e_]*')`;
  switch (a) {
    case 'TEXT':
      return `typeof(${x}) IN ('integer', 'real')`;
    case 'INTEGER':
    case 'NUMERIC':
      return `((typeof(${x}) = 'real' AND ${x} = CAST(${x} AS INTEGER)) OR ${numeric})`;
    case 'REAL':
      return numeric;
    case 'BLOB':
      return '0';
  }
}

/**
 * The values of `columns` of `schema.table` that each one's declared type
 * (`type`) would store in another storage class, per column that has any,
 * with one row's `key` values. Reads the table once per column that has an
 * affinity, and writes only the values that may convert to a TEMP table
 * (dropped before it returns): meant for when such values are suspected (a
 * declaration changed in place), not for every read.
 */
export function affinityMisfits(
  db: Db,
  schema: string,
  table: string,
  columns: readonly { readonly name: string; readonly type: string }[],
  key: readonly string[],
): AffinityMisfit[] {
  const out: AffinityMisfit[] = [];
  const from = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  const keys = key.map((k, i) => `${quoteIdent(k)} AS k${i}`);
  for (const c of columns) {
    const affinity = affinityOf(c.type);
    if (affinity === 'BLOB') continue;
    const x = quoteIdent(c.name);
    db.exec(`DROP TABLE IF EXISTS temp.${PROBE}`);
    // v takes the affinity; o keeps the value as it was (no type), c its class.
    db.exec(`CREATE TEMP TABLE ${PROBE} (v ${affinity}, o, c${key.map((_, i) => `, k${i}`).join('')})`);
    try {
      db.prepare(
        `INSERT INTO temp.${PROBE} SELECT ${[x, x, `typeof(${x})`, ...keys].join(', ')} FROM ${from} WHERE ${mayConvert(x, affinity)}`,
      ).run();
      const found = db
        .prepare(`SELECT count(*) AS n, group_concat(DISTINCT c) AS classes FROM temp.${PROBE} WHERE typeof(v) <> c`)
        .safeIntegers(false)
        .get() as { n: number; classes: string | null };
      if (found.n === 0) continue;
      const one = db
        .prepare(
          `SELECT ${["CASE WHEN length(quote(o)) > 40 THEN substr(quote(o), 1, 37) || '...' ELSE quote(o) END", ...key.map((_, i) => `k${i}`)].join(', ')} FROM temp.${PROBE} WHERE typeof(v) <> c LIMIT 1`,
        )
        .raw()
        .get() as unknown[];
      out.push({
        column: c.name,
        affinity,
        count: found.n,
        classes: (found.classes ?? '').split(',').sort(),
        key: one.slice(1).map((v) => toJsonValue(fromDriver(v))),
        value: String(one[0]),
      });
    } finally {
      db.exec(`DROP TABLE IF EXISTS temp.${PROBE}`);
    }
  }
  return out;
}

const PROBE = '_sluice_affinity';
