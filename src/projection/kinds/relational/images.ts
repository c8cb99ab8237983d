import type { Db } from '../../../sqlite/index.ts';
import {
  allOf,
  quoteIdent,
  cachedStatement,
  fromDriver,
  toJsonValue,
  workTable,
  workTableName,
  type JsonValue,
} from '../../../sqlite/index.ts';
import type { EventRelation } from '../../../feed/index.ts';
import { columnDecl, type CompiledProjection } from '../../compiled.ts';

/** `a AND b AND …` as a balanced tree (src/sqlite/balanced.ts): the apply paths take it from here. */
export { allOf };

/** Exact equality in SQL: same storage class and same bytes, never collation or affinity. */
export function sqlEq(a: string, b: string): string {
  return `(${a} IS ${b} COLLATE BINARY AND typeof(${a}) = typeof(${b}))`;
}

/**
 * Where the target images of an event are read, by its seq: side 0 is the
 * before-image projected to the target's columns, side 1 the after-image.
 * Both apply paths (relational/net.ts and relational/transitions.ts) read
 * images only through this, so a mirror and a map differ only here.
 */
export interface Images {
  /** Values for the named parameters of every statement that reads these images (bind them to each). */
  readonly params: Readonly<Record<string, number>>;
  /** `<relation> <alias>`, for a FROM clause. */
  rel(alias: string): string;
  /** The condition making `alias` the image of `seq` on `side`. */
  on(alias: string, seq: string, side: 0 | 1): string;
  /** Target column i of a before-image / after-image read as `alias`. */
  before(alias: string, i: number): string;
  after(alias: string, i: number): string;
  /**
   * One pass over the events in seq order as `e`, with what the transitions
   * need of both images: whether the event has them, their target keys, and
   * whether they are in the target (the map filter). `events` is the
   * relation read as `e`, in seq order; `joins` (maybe empty) LEFT JOINs
   * the images to it by seq.
   */
  readonly stream: {
    readonly events: string;
    readonly joins: string;
    readonly has: readonly [string, string];
    readonly key: readonly [readonly string[], readonly string[]];
    readonly inTarget: readonly [string, string];
    /** The event may change the projection (EventRelation.writes): one that may not is checked, not written. */
    readonly writes: string;
  };
}

/** `<relation> <alias> ON <alias> is the image of seq on side`, for a JOIN. */
export function joinImage(img: Images, alias: string, seq: string, side: 0 | 1): string {
  return `${img.rel(alias)} ON ${img.on(alias, seq, side)}`;
}

/** Positions of the target key columns among the target columns. */
export function keyIndexes(p: CompiledProjection): number[] {
  return p.key.map((k) => p.columns.findIndex((c) => c.name === k));
}

/**
 * Images read straight from the events: target column i is source column
 * `cols[i]`, the key is source columns `keys`.
 */
export function journalImages(events: EventRelation, cols: readonly number[], keys: readonly number[]): Images {
  return {
    params: events.params,
    rel: (alias) => `(${events.sql}) ${alias}`,
    on: (alias, seq) => `${alias}.seq = ${seq}`,
    before: (alias, i) => events.before(alias, cols[i] as number),
    after: (alias, i) => events.after(alias, cols[i] as number),
    stream: {
      events: `(${events.sql}) e`,
      joins: '',
      has: [events.hasBefore('e'), events.hasAfter('e')],
      key: [keys.map((i) => events.before('e', i)), keys.map((i) => events.after('e', i))],
      inTarget: ['1', '1'],
      writes: events.writes('e'),
    },
  };
}

/**
 * Makes the images of `events` (a relation of events keyed by seq) readable.
 *
 * Mirror: target image = source image, read from the events themselves.
 * Map: the definition's expressions and filter must see the source columns
 * typed and collated as in the source (the same SQL the snapshot runs over
 * the source table), so the images are copied once into a TEMP table with
 * the source's declarations, keyed by (seq, side), and projected where read.
 */
const IMG = '_sluice_img';

/** The columns of a map's image table (prepareImages): each event's images keyed by (seq, side), declared as the source declares them. */
function imageColumns(p: CompiledProjection): string {
  const imgCols = p.source.columns.map((c) => `${quoteIdent(c.name)} ${columnDecl(c)}`);
  return `_sluice_seq INTEGER NOT NULL, _sluice_side INTEGER NOT NULL, ${imgCols.join(', ')}, PRIMARY KEY (_sluice_seq, _sluice_side)`;
}

/** An image on which one of a map's expressions (or its filter) raises an error in SQLite. */
export interface RaisingImage {
  /** `column NAME` or `filter`. */
  readonly what: string;
  readonly expr: string;
  readonly seq: number;
  /** The source key of the image. */
  readonly key: readonly JsonValue[];
  readonly message: string;
}

/** A batch failed because an expression raised on `image` (the SQLite error is the cause). */
export class ExpressionRaised extends Error {
  constructor(
    readonly image: RaisingImage,
    cause: unknown,
  ) {
    super(image.message, { cause });
    this.name = 'ExpressionRaised';
  }
}

/**
 * A map's expressions that can raise on a value, each as the map evaluates
 * it: its filter, and each computed column where the filter holds (`what`
 * names it, `expr` is as written, `sql` as evaluated).
 */
export function mapExpressions(p: CompiledProjection): { readonly what: string; readonly expr: string; readonly sql: string }[] {
  const guard = (e: string) => (p.filter === null ? e : `CASE WHEN ${p.filter} THEN ${e} END`);
  return [
    ...(p.filter === null ? [] : [{ what: 'filter', expr: p.filter, sql: p.filter }]),
    ...p.columns.filter((c) => c.from === undefined).map((c) => ({ what: `column ${c.name}`, expr: c.expr, sql: guard(c.expr) })),
  ];
}

/**
 * After a batch of `p` (a map) failed in SQLite: the first image, in seq
 * order, on which one of its computed columns or its filter raises, as the
 * batch evaluates it (an expression inside the filter only where the filter
 * holds), read from the image table prepareImages filled in the open
 * transaction; undefined when none raises there (or the table is gone).
 */
export function raisingImage(db: Db, p: CompiledProjection): RaisingImage | undefined {
  if (p.identity) return undefined;
  const table = `temp.${quoteIdent(workTableName(IMG, imageColumns(p), { withoutRowid: true }))}`;
  const exprs = mapExpressions(p);
  let rows: { seq: number; side: number }[];
  try {
    rows = db.prepare(`SELECT _sluice_seq AS seq, _sluice_side AS side FROM ${table} ORDER BY 1, 2`).all() as {
      seq: number;
      side: number;
    }[];
  } catch {
    return undefined;
  }
  const keys = p.source.keyColumns.map(quoteIdent).join(', ');
  for (const r of rows) {
    for (const e of exprs) {
      try {
        db.prepare(`SELECT ${e.sql} FROM ${table} WHERE _sluice_seq = ? AND _sluice_side = ?`).get(r.seq, r.side);
      } catch (err) {
        const raw = db
          .prepare(`SELECT ${keys} FROM ${table} WHERE _sluice_seq = ? AND _sluice_side = ?`)
          .raw()
          .get(r.seq, r.side) as unknown[];
        const key = raw.map((x) => toJsonValue(fromDriver(x ?? null)));
        return { what: e.what, expr: e.expr, seq: Number(r.seq), key, message: err instanceof Error ? err.message : String(err) };
      }
    }
  }
  return undefined;
}

export function prepareImages(db: Db, p: CompiledProjection, events: EventRelation): Images {
  const keyIdx = keyIndexes(p);
  if (p.identity)
    return journalImages(
      events,
      p.columns.map((_, i) => i),
      keyIdx,
    );
  const imgTable = workTable(db, IMG, imageColumns(p), { withoutRowid: true });
  // One pass over the events, appends only: (seq, side) is the insertion order.
  cachedStatement(
    db,
    `INSERT INTO ${imgTable}
    SELECT seq, s.side, ${p.source.columns.map((_, i) => `CASE WHEN s.side = 0 THEN ${events.before('', i)} ELSE ${events.after('', i)} END`).join(', ')}
      FROM (${events.sql}) CROSS JOIN (SELECT 0 AS side UNION ALL SELECT 1) s
     WHERE CASE s.side WHEN 0 THEN ${events.hasBefore('')} ELSE ${events.hasAfter('')} END`,
  ).run(events.params);
  // The projected images, evaluated where they are read (no copy): inf is
  // 1 when the image is in the target (passes the filter), 0 when it is
  // not. An image outside the filter keeps its key (inf = 0), not dropped:
  // its key must still be checked against the target. Without that, an
  // insert whose row is filtered out (an uncaptured REPLACE of a row that
  // was in the filter) would leave the old target row silently stale. Other
  // expressions are evaluated only inside the filter, as in the snapshot.
  const inf = p.filter === null ? '1' : `CASE WHEN ${p.filter} THEN 1 ELSE 0 END`;
  const exprs = p.columns.map((c) => (p.filter === null || p.key.includes(c.name) ? c.expr : `CASE WHEN ${p.filter} THEN ${c.expr} END`));
  const projected = `(SELECT _sluice_seq AS seq, _sluice_side AS side, ${inf} AS inf, ${exprs.map((e, i) => `${e} AS v${i}`).join(', ')} FROM ${imgTable})`;
  // A computed column with a declared type stores its value with that
  // type's affinity (length(v) into a TEXT column is stored as '3', not 3),
  // in the snapshot and in every write. Its images must carry the same
  // affinity, or a before-image never equals the stored row: they are then
  // projected once into a TEMP table declared like the target.
  let pi = projected;
  if (hasTypedComputedColumn(p)) {
    pi = workTable(
      db,
      '_sluice_pimg',
      `seq INTEGER NOT NULL, side INTEGER NOT NULL, inf INTEGER NOT NULL, ${p.columns.map((c, i) => `v${i} ${c.decl}`).join(', ')}, PRIMARY KEY (seq, side)`,
      { withoutRowid: true },
    );
    cachedStatement(db, `INSERT INTO ${pi} SELECT * FROM ${projected}`).run();
  }
  const on = (alias: string, seq: string, side: 0 | 1) => `${alias}.seq = ${seq} AND ${alias}.side = ${side}`;
  return {
    params: events.params,
    rel: (alias) => `${pi} ${alias}`,
    on,
    before: (alias, i) => `${alias}.v${i}`,
    after: (alias, i) => `${alias}.v${i}`,
    stream: {
      events: `(SELECT seq, ${events.writes('')} AS wr FROM (${events.sql})) e`,
      joins: `LEFT JOIN ${pi} x ON ${on('x', 'e.seq', 0)} LEFT JOIN ${pi} y ON ${on('y', 'e.seq', 1)}`,
      has: ['x.seq IS NOT NULL', 'y.seq IS NOT NULL'],
      key: [keyIdx.map((i) => `x.v${i}`), keyIdx.map((i) => `y.v${i}`)],
      inTarget: ['x.inf', 'y.inf'],
      writes: 'e.wr',
    },
  };
}

/**
 * A map column computed by an expression and declared with a type: the
 * target stores its values with that type's affinity, which may change
 * their storage class (3 into TEXT is '3').
 */
export function hasTypedComputedColumn(p: CompiledProjection): boolean {
  return p.columns.some((c) => c.from === undefined && c.type !== '');
}

/** In the event stream: the before- and after-image have the same target key, byte for byte. */
export function sameKeyBothSides(img: Images): string {
  const [k0, k1] = img.stream.key;
  return allOf(k0.map((k, j) => sqlEq(k, k1[j] as string)));
}
