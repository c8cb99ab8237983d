import { affinityOf, allOf, type Affinity, quoteIdent } from '../../sqlite/index.ts';
import type { Db } from '../../sqlite/index.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { hasTypedComputedColumn, kindOf } from '../../projection/index.ts';
import { CHANGED_HELD, CHANGED_TABLE, changedKeyColumns } from './verify-rewind.ts';
import type { StepProgress } from './verify-progress.ts';

/** The source side of a comparison: key and value expressions over `from` (filtered by `where`), paired with the target's. */
interface SourceRows {
  readonly from: string;
  readonly where: string;
  readonly keys: readonly string[];
  readonly values: readonly string[];
  /** Which of `values` are always integers (the source table's rowid alias, read from the table itself). */
  readonly integers?: readonly number[];
}

/**
 * A proof that a relational projection at seq `lo` holds exactly the
 * source's rows as they were at `lo` (verify's comparison), in SQL alone:
 * the count of source rows equal to their target row (provedEqual's join),
 * and of the target's rows, as a caught-up verify does; then, when the
 * events after `lo` changed `changed` keys (CHANGED_TABLE, verify-rewind.ts),
 * one pass over those keys that looks up each in the source and in the
 * target by key (changedCounts). Its cost is the caught-up comparison plus
 * work bounded by the events, never a lookup of every row in the changed
 * keys. With `shadow`, the changed keys are left out (its swap reads each
 * again from the source); otherwise each is compared as it was at `lo`.
 * The number of source rows compared, or undefined without a proof.
 *
 * The partition: a key outside the changed ones must be equal now and then,
 * so every source row outside them must match its target row (whole's
 * matches less the changed keys' own), and the target must hold no other
 * row outside them (its count less the changed keys' rows); the changed
 * keys' rows at `lo` must each match their target row, and the target hold
 * no other row with a changed key.
 */
export function provedAtCursor(
  db: Db,
  p: CompiledProjection,
  schema: string,
  at: { readonly changed: number; readonly shadow: boolean; readonly progress?: StepProgress | undefined },
): number | undefined {
  const target = relationalTarget(db, p, schema);
  if (target === undefined) return undefined;
  const src = sourceRows(db, p);
  if (src.values.length !== p.columns.length) return undefined;
  const whole = matchCounts(db, p, target, src, at.progress);
  const held = db.prepare(`SELECT count(*) FROM ${target.name}`).pluck().safeIntegers(false).get() as number;
  if (at.changed === 0) return whole.matched === whole.compared && held === whole.compared ? whole.compared : undefined;
  const c = changedCounts(db, p, target, src, at.changed, at.progress);
  const others = whole.compared - c.inSource;
  if (whole.matched - c.sourceMatched !== others || held - c.inTarget !== others) return undefined;
  if (at.shadow) return others;
  return c.atCursorMatched === c.atCursor && c.inTarget === c.atCursor ? others + c.atCursor : undefined;
}

/** A relational projection's target table as the proof reads it. */
interface RelationalTarget {
  /** Schema-qualified name. */
  readonly name: string;
  /** SQL: the values of row `s` (its columns v0, v1, ...; those at `integers` always integers) are those of target row `t`, by class and bytes. */
  same(integers: readonly number[] | undefined, s: string, t: string): string;
  /** The target row's key column i (`p.key` order), over alias `t`. */
  key(t: string, i: number): string;
}

/** The target as a relational table is made (its primary key exactly the projection's key), or undefined. */
function relationalTarget(db: Db, p: CompiledProjection, schema: string): RelationalTarget | undefined {
  const table = p.targetTable;
  const info = db.prepare('SELECT name, type, pk FROM pragma_table_info(?, ?)').all(table, schema) as {
    name: string;
    type: string;
    pk: number;
  }[];
  const column = (name: string) => info.find((c) => c.name === name);
  // The joins below rely on the target's primary key being exactly the projection's key.
  const pk = info.filter((c) => c.pk > 0).map((c) => c.name);
  if (p.key.length === 0 || pk.length !== p.key.length || p.key.some((k) => !pk.includes(k))) return undefined;
  if (p.columns.some((c) => column(c.name) === undefined)) return undefined;
  if (p.key.some((k) => p.columns.findIndex((c) => c.name === k) < 0)) return undefined;
  const alias = rowidAlias(db, schema, table, info);
  return {
    name: `${quoteIdent(schema)}.${quoteIdent(table)}`,
    key: (t, i) => `${t}.${quoteIdent(p.key[i] as string)}`,
    // A balanced tree of the columns' tests: a left-deep AND chain over a wide table passes SQLite's expression depth.
    same: (integers, s, t) =>
      allOf(
        p.columns.map((c, i) =>
          sameValue(
            `${s}.v${i}`,
            `${t}.${quoteIdent(c.name)}`,
            // The target's own declared type: its tables are ordinary ones, where ANY is NUMERIC as any other name.
            affinityOf(column(c.name)?.type ?? ''),
            integers?.includes(i) === true,
            c.name === alias,
          ),
        ),
      ),
  };
}

/** `SELECT keys AS k0.., values AS v0.. FROM ...` of a source side. */
function rowsOf(src: SourceRows): string {
  return `SELECT ${[...src.keys.map((k, i) => `${k} AS k${i}`), ...src.values.map((v, i) => `${v} AS v${i}`)].join(', ')} FROM ${src.from}${src.where}`;
}

/**
 * The rows of the source side (`compared`) and how many of them equal their
 * target row (`matched`): each source row joined to the target's primary
 * key (unique, so one row at most), with every value the same, by storage
 * class and bytes (as verify's checksums compare them, ±0.0 included),
 * without a JS call per row.
 */
function matchCounts(
  db: Db,
  p: CompiledProjection,
  target: RelationalTarget,
  src: SourceRows,
  progress?: StepProgress,
): { compared: number; matched: number } {
  const on = [...p.key.map((_, i) => `${target.key('t', i)} = s.k${i}`), target.same(src.integers, 's', 't')].join(' AND ');
  if (progress !== undefined) progress.start('rows', sourceCount(db, src));
  const [compared, matched] = db
    .prepare(
      `SELECT count(*), count(${target.key('t', 0)}) FROM (${rowsOf(src)}) AS s LEFT JOIN ${target.name} AS t ON ${on}${progress === undefined ? '' : ` WHERE ${progress.sample()}`}`,
    )
    .raw()
    .safeIntegers(false)
    .get() as [number, number];
  progress?.end();
  return { compared, matched };
}

/** The rows a source side reads (before its filter): the total of its progress. */
function sourceCount(db: Db, src: SourceRows): number {
  return db.prepare(`SELECT count(*) FROM ${src.from}`).pluck().safeIntegers(false).get() as number;
}

interface ChangedCounts {
  /** Changed keys with a source row (one the filter keeps) now. */
  readonly inSource: number;
  /** Of those, the ones equal to their target row. */
  readonly sourceMatched: number;
  /** Changed keys with a target row. */
  readonly inTarget: number;
  /** Changed keys that had a row at the cursor, one the filter keeps: the rows the target should hold for them. */
  readonly atCursor: number;
  /** Of those, the ones equal to their target row. */
  readonly atCursorMatched: number;
}

/**
 * One pass over the changed keys (CHANGED_TABLE, in key order), each looked
 * up in the source side and in the target by its key, byte for byte: an
 * index lookup each (the source and target keys have the changed table's
 * affinity and their own collation; BINARY then tells 'a' from 'A').
 */
function changedCounts(
  db: Db,
  p: CompiledProjection,
  target: RelationalTarget,
  src: SourceRows,
  changed: number,
  progress?: StepProgress,
): ChangedCounts {
  const keyCols = changedKeyColumns(p);
  const atCursor = `CASE WHEN ${CHANGED_HELD} = 1${p.filter === null ? '' : ` AND (${p.filter})`} THEN 1 END`;
  const rewound = changedRows(db, p, keyCols, atCursor);
  // A source side staged in a TEMP table (typed computed columns) is looked up by key here: index it.
  if (src.from.startsWith('temp.')) db.exec(`CREATE INDEX ${src.from}_k ON ${src.from.slice('temp.'.length)} (${src.keys.join(', ')})`);
  // Looked up by the key's own collation (its index's), then told apart byte for byte where that collation is not BINARY.
  const binary = p.key.map((kc) => {
    const from = p.columns.find((c) => c.name === kc)?.from ?? kc;
    return (p.source.columns.find((c) => c.name === from)?.collate ?? 'BINARY') === 'BINARY';
  });
  const sameKey = (a: string, b: string, i: number) => `${a} IS ${b}${binary[i] === true ? '' : ` AND ${a} IS ${b} COLLATE BINARY`}`;
  const bySource = p.key.map((_, i) => sameKey(`s.k${i}`, `f.c${i}`, i)).join(' AND ');
  const byTarget = p.key.map((_, i) => sameKey(target.key('t', i), `f.c${i}`, i)).join(' AND ');
  progress?.start('keys', changed);
  // Each key's five facts first, then counted: an aggregate over the columns' tests themselves holds every
  // column it reads (of s, f and t) as a term, and SQLite takes at most 2000 ("more than 2000 aggregate terms").
  const row = db
    .prepare(
      `WITH facts AS MATERIALIZED (
        SELECT s.k0 AS in_source, CASE WHEN ${target.key('t', 0)} IS NOT NULL AND ${target.same(src.integers, 's', 't')} THEN 1 END AS source_matched,
          ${target.key('t', 0)} AS in_target, f.r AS at_cursor, CASE WHEN f.r IS NOT NULL AND ${target.same(undefined, 'f', 't')} THEN 1 END AS at_cursor_matched
        FROM (${rewound}) AS f
        LEFT JOIN (${rowsOf(src)}) AS s ON ${bySource}
        LEFT JOIN ${target.name} AS t ON ${byTarget}${progress === undefined ? '' : ` WHERE ${progress.sample()}`})
      SELECT count(in_source), count(source_matched), count(in_target), count(at_cursor), count(at_cursor_matched) FROM facts`,
    )
    .raw()
    .safeIntegers(false)
    .get() as [number, number, number, number, number];
  progress?.end();
  return { inSource: row[0], sourceMatched: row[1], inTarget: row[2], atCursor: row[3], atCursorMatched: row[4] };
}

/**
 * The changed keys as rows: c0, c1, ... (the target key), r (1 when the key
 * had a row at the cursor that the filter keeps, else NULL) and v0, v1, ...
 * (the projection's values of that row). Over CHANGED_TABLE aliased to the
 * source table's name, so the filter and computed columns read it as they
 * read the source; staged in a TEMP table when typed computed columns must
 * be stored with their affinity first, as sourceRows does.
 */
function changedRows(db: Db, p: CompiledProjection, keyCols: readonly string[], atCursor: string): string {
  const select = (values: readonly string[]) =>
    `SELECT ${[...keyCols.map((k, i) => `${k} AS c${i}`), `${atCursor} AS r`, ...values.map((x, i) => `${x} AS v${i}`)].join(', ')} FROM ${CHANGED_TABLE} AS ${quoteIdent(p.source.table)}`;
  if (!hasTypedComputedColumn(p)) return select(kindOf(p).verification?.sourceValues(p) ?? []);
  const keyDecl = p.key.map((k) => p.columns.find((c) => c.name === k)?.decl ?? '');
  db.exec('DROP TABLE IF EXISTS temp._sluice_vrw');
  db.exec(
    `CREATE TEMP TABLE _sluice_vrw (${[...keyDecl.map((d, i) => `c${i} ${d}`), 'r', ...p.columns.map((c, i) => `v${i} ${c.decl}`)].join(', ')})`,
  );
  db.exec(`INSERT INTO temp._sluice_vrw ${select(p.columns.map((c) => c.expr))}`);
  return 'SELECT * FROM temp._sluice_vrw';
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
const NEGATIVE_ZERO = 'sluice_negative_zero';

export function registerNegativeZero(db: Db): void {
  db.function(NEGATIVE_ZERO, { deterministic: true }, (x: unknown) => (Object.is(x, -0) ? 1 : 0));
}

/** The source side's keys and values (target column order), over the source table or `from`. */
export function sourceRows(db: Db, p: CompiledProjection, from = `main.${quoteIdent(p.source.table)}`): SourceRows {
  const where = p.filter === null ? '' : ` WHERE ${p.filter}`;
  if (hasTypedComputedColumn(p)) {
    // The target stores typed computed columns with their affinity: so must
    // the source side before hashing (see relational/images.ts).
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
