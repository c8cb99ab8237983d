import { declaredType } from '../sqlite/column-decl.ts';
import type { Db } from '../sqlite/connection.ts';
import { affinityOf, type Affinity } from '../sqlite/affinity.ts';
import { quoteIdent } from '../sqlite/quote.ts';
import type { CompiledProjection } from '../projection/compile.ts';
import { hasTypedComputedColumn } from '../projection/kinds/relational/images.ts';
import { kindOf } from '../projection/kinds/registry.ts';
import { REWOUND_TABLE, rewindToCursor } from './verify-rewind.ts';

/** The source side of a comparison: key and value expressions over `from` (filtered by `where`), paired with the target's. */
export interface SourceRows {
  readonly from: string;
  readonly where: string;
  readonly keys: readonly string[];
  readonly values: readonly string[];
  /** Which of `values` are always integers (the source table's rowid alias, read from the table itself). */
  readonly integers?: readonly number[];
}

/** The in-flight keys table (verify.ts): keys k0, k1, ... left out of a comparison. */
const IN_FLIGHT = 'temp._sluice_inflight';

/**
 * A proof that a relational projection at seq `lo` holds exactly the
 * source's rows (verify's comparison, provedEqual): with no key changed in
 * (lo, hw], the source table as it is; for a shadow, leaving out the keys
 * changed since, which its swap reads again; else the keys changed since
 * as the source had them at `lo` (verify-rewind.ts), and the others as they
 * are. The number of source rows compared, or undefined without a proof.
 */
export function provedAtCursor(
  db: Db,
  p: CompiledProjection,
  schema: string,
  at: { readonly tid: number; readonly lo: number; readonly hw: number; readonly inFlight: number; readonly shadow: boolean },
): number | undefined {
  if (at.inFlight === 0) return provedEqual(db, p, sourceRows(db, p), schema, p.targetTable, 'all');
  const others = provedEqual(db, p, sourceRows(db, p), schema, p.targetTable, 'skip');
  if (others === undefined || at.shadow) return others;
  if (!rewindToCursor(db, p, at.tid, at.lo, at.hw)) return undefined;
  const rewound = provedEqual(db, p, sourceRows(db, p, `${REWOUND_TABLE} AS ${quoteIdent(p.source.table)}`), schema, p.targetTable, 'only');
  return rewound === undefined ? undefined : others + rewound;
}

/**
 * A proof, in SQL alone, that a relational projection's table (`table`, in
 * `schema`) holds exactly the source side's rows: every source row has a
 * target row with its key whose every value is the same, by storage class
 * and bytes (as verify's checksums compare them, ±0.0 included), and the
 * target has no other row; of the rows whose keys are in the in-flight
 * table (`only`), or of the others (`skip`), or of all.
 *
 * It is the same comparison as verify's per-key checksums, without a JS
 * call per row: the source rows are joined to the target's primary key
 * (unique, so one row at most per source row). The checksums stay the
 * reporter: when this finds no proof, the caller compares by them and
 * names the keys that differ.
 *
 * Returns the number of source rows compared when they match, undefined
 * when they do not (or the target is not as a relational table is made).
 */
function provedEqual(
  db: Db,
  p: CompiledProjection,
  src: SourceRows,
  schema: string,
  table: string,
  inFlight: 'all' | 'skip' | 'only',
): number | undefined {
  const info = db.prepare('SELECT name, type, pk FROM pragma_table_info(?, ?)').all(table, schema) as {
    name: string;
    type: string;
    pk: number;
  }[];
  const column = (name: string) => info.find((c) => c.name === name);
  // The join below relies on the target's primary key being exactly the projection's key.
  const pk = info.filter((c) => c.pk > 0).map((c) => c.name);
  if (p.key.length === 0 || pk.length !== p.key.length || p.key.some((k) => !pk.includes(k))) return undefined;
  if (p.columns.length !== src.values.length || p.columns.some((c) => column(c.name) === undefined)) return undefined;
  const keyAt = p.key.map((k) => p.columns.findIndex((c) => c.name === k));
  if (keyAt.some((i) => i < 0)) return undefined;
  const t = (name: string) => `t.${quoteIdent(name)}`;
  const alias = rowidAlias(db, schema, table, info);
  const same = p.columns.map((c, i) =>
    sameValue(
      `s.v${i}`,
      t(c.name),
      affinityOf(declaredType(column(c.name)?.type ?? '')),
      src.integers?.includes(i) === true,
      c.name === alias,
    ),
  );
  const on = [...p.key.map((k, i) => `${t(k)} = s.k${i}`), ...same].join(' AND ');
  const flying = (k: (i: number) => string) =>
    inFlight === 'all'
      ? ''
      : ` WHERE ${inFlight === 'skip' ? 'NOT ' : ''}EXISTS (SELECT 1 FROM ${IN_FLIGHT} f WHERE ${p.key.map((_, i) => `f.k${i} IS ${k(i)}`).join(' AND ')})`;
  const rows = `SELECT ${[...src.keys.map((k, i) => `${k} AS k${i}`), ...src.values.map((v, i) => `${v} AS v${i}`)].join(', ')} FROM ${src.from}${src.where}`;
  const target = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  const [compared, matched] = db
    .prepare(
      `SELECT count(*), count(${t(p.key[0] as string)}) FROM (${rows}) AS s LEFT JOIN ${target} AS t ON ${on}${flying((i) => `s.k${i}`)}`,
    )
    .raw()
    .safeIntegers(false)
    .get() as [number, number];
  if (matched !== compared) return undefined;
  const held = db
    .prepare(`SELECT count(*) FROM ${target} AS t${flying((i) => t(p.key[i] as string))}`)
    .pluck()
    .safeIntegers(false)
    .get() as number;
  return held === compared ? compared : undefined;
}

/**
 * Whether source value `a` is target value `b` by storage class and bytes.
 * Both go in as `+x`, which has no affinity, so that the comparison converts
 * neither (a TEXT column's '1' would otherwise equal an INTEGER column's 1);
 * then IS with binary collation tells NULL, numbers, text (by its bytes) and
 * blobs apart, but takes 1 for 1.0, and 0.0 for -0.0. A TEXT column holds
 * no number, so IS is enough there; one of another affinity needs the
 * classes compared too, and one of REAL or no affinity its zeros by sign
 * (NUMERIC and INTEGER store a real zero as the integer 0).
 */
function sameValue(a: string, b: string, affinity: Affinity, aInteger: boolean, bInteger: boolean): string {
  const is = `+${a} COLLATE BINARY IS +${b}`;
  // A rowid alias holds integers only: its class needs no reading.
  if (aInteger && bInteger) return is;
  if (aInteger || bInteger) return `${is} AND typeof(${aInteger ? b : a}) = 'integer'`;
  if (affinity === 'TEXT') return is;
  const cls = `typeof(${a}) = typeof(${b})`;
  if (affinity === 'INTEGER' || affinity === 'NUMERIC') return `${is} AND ${cls}`;
  // Of the same class and IS, a and b are one number: b (a column, not an expression) tells whether it is a real zero.
  return `${is} AND ${cls} AND (+${b} <> 0 OR typeof(${b}) <> 'real' OR ${NEGATIVE_ZERO}(${a}) = ${NEGATIVE_ZERO}(${b}))`;
}

/**
 * The column of `table` that is its rowid alias, if any: a lone INTEGER
 * PRIMARY KEY of a rowid table without an index of its own (a DESC one has
 * one, and is no alias), the rule describeTable applies to the source.
 */
function rowidAlias(
  db: Db,
  schema: string,
  table: string,
  info: readonly { name: string; type: string; pk: number }[],
): string | undefined {
  const pk = info.filter((c) => c.pk > 0);
  const only = pk.length === 1 ? pk[0] : undefined;
  if (only === undefined || only.type.toUpperCase() !== 'INTEGER') return undefined;
  const at = quoteIdent(schema);
  const wr = db.prepare(`SELECT wr FROM ${at}.pragma_table_list(?)`).pluck().safeIntegers(false).get(table) as number | undefined;
  const indexed = db.prepare(`SELECT 1 FROM ${at}.pragma_index_list(?) WHERE origin = 'pk'`).get(table) !== undefined;
  return wr === 0 && !indexed ? only.name : undefined;
}

/** sluice_negative_zero(x): 1 for -0.0, else 0 (SQL compares -0.0 equal to 0.0 and prints both as 0.0). */
export const NEGATIVE_ZERO = 'sluice_negative_zero';

export function registerNegativeZero(db: Db): void {
  db.function(NEGATIVE_ZERO, { deterministic: true }, (x: unknown) => (Object.is(x, -0) ? 1 : 0));
}

/** The source side's keys and values (target column order), over the source table or `from`. */
export function sourceRows(db: Db, p: CompiledProjection, from = `main.${quoteIdent(p.source.table)}`): SourceRows {
  const where = p.filter === null ? '' : ` WHERE ${p.filter}`;
  if (hasTypedComputedColumn(p)) {
    // The target stores typed computed columns with their affinity: so must
    // the source side before hashing (see relational-images.ts).
    db.exec('DROP TABLE IF EXISTS temp._sluice_vsrc');
    db.exec(`CREATE TEMP TABLE _sluice_vsrc (${p.columns.map((c) => `${quoteIdent(c.name)} ${c.decl}`).join(', ')})`);
    db.exec(`INSERT INTO temp._sluice_vsrc SELECT ${p.columns.map((c) => c.expr).join(', ')} FROM ${from}${where}`);
    return {
      from: 'temp._sluice_vsrc',
      where: '',
      keys: p.key.map(quoteIdent),
      values: p.columns.map((c) => quoteIdent(c.name)),
    };
  }
  const keys = p.key.map((kc) => p.columns.find((c) => c.name === kc)?.expr ?? quoteIdent(kc));
  const values = kindOf(p).verification?.sourceValues(p) ?? [];
  // Read from the source table itself, a plain copy of its rowid alias is an integer.
  const alias = p.source.rowidAlias && from === `main.${quoteIdent(p.source.table)}` ? p.source.keyColumns[0] : undefined;
  const integers = p.columns.flatMap((c, i) => (alias !== undefined && c.from === alias && values[i] === quoteIdent(alias) ? [i] : []));
  return { from, where, keys, values, integers };
}
