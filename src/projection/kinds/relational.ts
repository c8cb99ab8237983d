import type { Db } from '../../sqlite/connection.ts';
import { quoteIdent } from '../../sqlite/quote.ts';
import { fromDriver, toJsonValue, type JsonValue } from '../../sqlite/codec.ts';
import { journalColumn, OP_DELETE, OP_INSERT, OP_UPDATE } from '../../capture/schema.ts';
import type { CompiledProjection } from '../compile.ts';

/*
 * Set-based apply for mirror and map projections. Per-event semantics are
 * kept exactly, but evaluated by SQLite over the whole batch:
 *
 *  1. each event's before and after image is projected to a target image
 *     (mirror: as is; map: the definition's expressions and filter, run over
 *     a TEMP table typed and collated like the source, the same SQL the
 *     snapshot runs over the source table itself); an image outside the
 *     filter is absent, but keeps its key, which is still checked;
 *  2. events become per-key transitions (before -> after); a key change is
 *     two transitions (old key -> absent, absent -> new key);
 *  3. the chain of transitions of each key must link up (each before equals
 *     the previous after), and the first before must equal the target row as
 *     it is, compared by storage class and bytes;
 *  4. the last transition of each key is written (delete or replace).
 * Any mismatch aborts the whole batch before a row is written.
 */

/** Exact equality in SQL: same storage class and same bytes, never collation or affinity. */
export function sqlEq(a: string, b: string): string {
  return `(${a} IS ${b} COLLATE BINARY AND typeof(${a}) = typeof(${b}))`;
}

export interface RelationalMismatch {
  readonly seq: number;
  readonly key: readonly JsonValue[];
  /** `UNCAPTURED_REPLACE`: an insert found its key present; `TARGET_DIVERGED`: the before-image differs. */
  readonly reason: 'TARGET_DIVERGED' | 'UNCAPTURED_REPLACE';
  readonly where: 'target' | 'batch';
}

export interface RelationalResult {
  readonly transitions: number;
  readonly mismatch?: RelationalMismatch;
}

export function createRelationalTarget(db: Db, schema: string, p: CompiledProjection): void {
  const cols = p.columns.map((c) => `${quoteIdent(c.name)}${c.decl === '' ? '' : ` ${c.decl}`}`);
  const withoutRowid = p.identity && p.source.withoutRowid ? ' WITHOUT ROWID' : '';
  db.exec(`CREATE TABLE ${quoteIdent(schema)}.${quoteIdent(p.targetTable)} (${cols.join(', ')}, PRIMARY KEY (${p.key.map(quoteIdent).join(', ')}))${withoutRowid}`);
}

/** Fills the target from the source table (main) in the caller's transaction: the snapshot path. */
export function snapshotRelational(db: Db, schema: string, p: CompiledProjection): number {
  const target = `${quoteIdent(schema)}.${quoteIdent(p.targetTable)}`;
  const where = p.filter === null ? '' : ` WHERE ${p.filter}`;
  const sql = `INSERT INTO ${target} (${p.columns.map((c) => quoteIdent(c.name)).join(', ')}) SELECT ${p.columns.map((c) => c.expr).join(', ')} FROM main.${quoteIdent(p.source.table)}${where}`;
  return db.prepare(sql).run().changes;
}

/**
 * Applies the events of `events` (a relation with columns seq, op, ts and
 * the source images in journal layout c0..c(2n-1), keyed by seq) to the
 * target.
 *
 * Performance (bench/apply.ts): the transitions are kept narrow (key, seq,
 * sub, bp, ap) in ONE temp table filled in (key, seq, sub) order, so that
 * its rowids number each key's transitions consecutively: "the previous
 * transition of this key" is rowid - 1 with an equal key, and the first /
 * last of a key are rows whose neighbour has another key. Rowid lookups
 * replace the window functions (two sorts of wide rows plus one lag() per
 * column) that cost most of the old apply, and images are read by seq only
 * where a check or a write needs them: from the events themselves for a
 * mirror (no image copies at all), from the projected images for a map.
 */
export function applyRelational(db: Db, schema: string, p: CompiledProjection, events: string): RelationalResult {
  const n = p.source.columns.length;
  const target = `${quoteIdent(schema)}.${quoteIdent(p.targetTable)}`;
  const before = Array.from({ length: n }, (_, i) => journalColumn(i));
  const after = Array.from({ length: n }, (_, i) => `CASE WHEN op = ${OP_INSERT} THEN ${journalColumn(i)} ELSE ${journalColumn(n + i)} END`);
  const keyIdx = p.key.map((k) => p.columns.findIndex((c) => c.name === k));
  const keyDecl = keyIdx.map((i) => p.columns[i]?.decl ?? '');
  const k = keyIdx.map((_, j) => `k${j}`);

  dropTemps(db);
  // Keys typed and collated like the target key: ORDER BY and the neighbour
  // tests group keys exactly as the target's primary key does.
  db.exec(`CREATE TEMP TABLE _sluice_tr (${k.map((x, j) => `${x} ${keyDecl[j]}`).join(', ')}, seq INTEGER NOT NULL, sub INTEGER NOT NULL, bp INTEGER NOT NULL, ap INTEGER NOT NULL)`);
  // This ORDER BY sorts the SELECT's own columns (journal or image values,
  // BINARY), not _sluice_tr's: name the key collation, or 'abc' and 'ABC' of
  // a NOCASE key are not adjacent, and a case-only key change then looks like
  // an uncaptured REPLACE (the insert of 'ABC' sorts before the delete of 'abc').
  const keyCollate = keyIdx.map((i) => p.source.columns.find((c) => c.name === p.columns[i]?.from)?.collate ?? 'BINARY');
  const order = `ORDER BY ${k.map((x, j) => `${x} COLLATE ${keyCollate[j]}`).join(', ')}, seq, sub`;
  let img: Images;
  let transitions: number;
  if (p.identity) {
    // Mirror: target image = source image, so transitions come straight from
    // the events (the rows the image joins gave: sub 0 from the before-image,
    // keeping the after-image when the key stays; sub 1 to an after-image
    // under a new key), and images are read back from the events by seq.
    const keySame = keyIdx.map((i) => sqlEq(journalColumn(i), journalColumn(n + i))).join(' AND ');
    transitions = db
      .prepare(
        `INSERT INTO temp._sluice_tr (${k.join(', ')}, seq, sub, bp, ap)
      SELECT * FROM (
        SELECT ${keyIdx.map((i, j) => `${journalColumn(i)} AS k${j}`).join(', ')}, seq, 0 AS sub, 1, CASE WHEN op = ${OP_UPDATE} AND ${keySame} THEN 1 ELSE 0 END
          FROM (${events}) WHERE op IN (${OP_UPDATE}, ${OP_DELETE})
        UNION ALL
        SELECT ${keyIdx.map((i) => after[i]).join(', ')}, seq, 1, 0, 1
          FROM (${events}) WHERE op = ${OP_INSERT} OR (op = ${OP_UPDATE} AND NOT (${keySame}))
      ) ${order}`,
      )
      .run().changes;
    img = {
      join: (alias, seq) => `(${events}) ${alias} ON ${alias}.seq = ${seq}`,
      before: (alias, i) => `${alias}.${journalColumn(i)}`,
      after: (alias, i) => `CASE WHEN ${alias}.op = ${OP_INSERT} THEN ${alias}.${journalColumn(i)} ELSE ${alias}.${journalColumn(n + i)} END`,
    };
  } else {
    // Images typed and collated like the source, so expressions evaluate as
    // in the snapshot; keyed by (seq, side 0 = before / 1 = after) and filled
    // in that order (one pass over the events, appends only).
    const imgCols = p.source.columns.map((c) => `${quoteIdent(c.name)} ${c.type}${c.collate === 'BINARY' ? '' : ` COLLATE ${c.collate}`}`);
    db.exec(`CREATE TEMP TABLE _sluice_img (_sluice_seq INTEGER NOT NULL, _sluice_side INTEGER NOT NULL, ${imgCols.join(', ')}, PRIMARY KEY (_sluice_seq, _sluice_side)) WITHOUT ROWID`);
    db.exec(`INSERT INTO temp._sluice_img
      SELECT seq, s.side, ${before.map((_, i) => `CASE WHEN s.side = 0 OR op = ${OP_INSERT} THEN ${journalColumn(i)} ELSE ${journalColumn(n + i)} END`).join(', ')}
        FROM (${events}) CROSS JOIN (SELECT 0 AS side UNION ALL SELECT 1) s
       WHERE CASE s.side WHEN 0 THEN op IN (${OP_UPDATE}, ${OP_DELETE}) ELSE op IN (${OP_INSERT}, ${OP_UPDATE}) END`);
    // The projected images, evaluated where they are read (no copy): inf is
    // 1 when the image is in the target (passes the filter), 0 when it is
    // not. An image outside the filter is kept as its key alone (inf = 0),
    // not dropped: its key must still be checked against the target. Without
    // that, an insert whose row is filtered out (an uncaptured REPLACE of a
    // row that was in the filter) would leave the old target row silently
    // stale. Other expressions are evaluated only inside the filter, as in
    // the snapshot.
    const inf = p.filter === null ? '1' : `CASE WHEN ${p.filter} THEN 1 ELSE 0 END`;
    const exprs = p.columns.map((c) => (p.filter === null || p.key.includes(c.name) ? c.expr : `CASE WHEN ${p.filter} THEN ${c.expr} END`));
    const pi = `(SELECT _sluice_seq AS seq, _sluice_side AS side, ${inf} AS inf, ${exprs.map((e, i) => `${e} AS v${i}`).join(', ')} FROM temp._sluice_img)`;
    const same = keyIdx.map((i) => sqlEq(`x.v${i}`, `y.v${i}`)).join(' AND ');
    db.exec(`INSERT INTO temp._sluice_tr (${k.join(', ')}, seq, sub, bp, ap)
      SELECT * FROM (
        SELECT ${keyIdx.map((i, j) => `x.v${i} AS k${j}`).join(', ')}, x.seq AS seq, 0 AS sub, x.inf, CASE WHEN y.seq IS NOT NULL AND ${same} THEN y.inf ELSE 0 END
          FROM ${pi} x LEFT JOIN ${pi} y ON y.seq = x.seq AND y.side = 1
         WHERE x.side = 0
        UNION ALL
        SELECT ${keyIdx.map((i) => `y.v${i}`).join(', ')}, y.seq, 1, 0, y.inf
          FROM ${pi} y LEFT JOIN ${pi} x ON x.seq = y.seq AND x.side = 0
         WHERE y.side = 1 AND (x.seq IS NULL OR NOT (${same}))
      ) ${order}`);
    // Absent -> absent transitions (outside the filter on both sides) are checks, not changes.
    transitions = Number((db.prepare('SELECT count(*) FROM temp._sluice_tr WHERE bp = 1 OR ap = 1').pluck().get() as bigint) ?? 0n);
    // The before-image of a transition is its event's side 0, the after-image its side 1.
    img = {
      join: (alias, seq, side) => `${pi} ${alias} ON ${alias}.seq = ${seq} AND ${alias}.side = ${side}`,
      before: (alias, i) => `${alias}.v${i}`,
      after: (alias, i) => `${alias}.v${i}`,
    };
  }

  const mismatch = findMismatch(db, p, target, k, img);
  if (mismatch !== undefined) return { transitions, mismatch };

  // The last transition of each key: the next row (rowid + 1) has another key.
  const last = `temp._sluice_tr x LEFT JOIN temp._sluice_tr z ON z.rowid = x.rowid + 1 AND ${sameKey('z', 'x', k)}`;
  const keyList = p.key.map(quoteIdent).join(', ');
  db.exec(`DELETE FROM ${target} WHERE (${keyList}) IN (SELECT ${k.map((c) => `x.${c}`).join(', ')} FROM ${last} WHERE z.rowid IS NULL AND x.ap = 0)`);
  // CROSS JOIN keeps the image lookup inside the loop over the transitions (by seq), never the other way round.
  db.exec(`INSERT OR REPLACE INTO ${target} (${p.columns.map((c) => quoteIdent(c.name)).join(', ')})
    SELECT ${p.columns.map((_, i) => img.after('e', i)).join(', ')} FROM ${last} CROSS JOIN ${img.join('e', 'x.seq', 1)} WHERE z.rowid IS NULL AND x.ap = 1`);
  dropTemps(db);
  return { transitions };
}

/** Where the target images of a transition are read from, by its seq. */
interface Images {
  /** `<relation> <alias> ON <alias> is the image of seq (side 0: before, 1: after)`, for a JOIN. */
  join(alias: string, seq: string, side: 0 | 1): string;
  /** Target column i of the before-image / after-image joined as `alias`. */
  before(alias: string, i: number): string;
  after(alias: string, i: number): string;
}

/** Same key as the target's primary key sees it (the key columns' collation), NULL-safe like PARTITION BY. */
function sameKey(l: string, r: string, k: readonly string[]): string {
  return k.map((c) => `${l}.${c} IS ${r}.${c}`).join(' AND ');
}

export function dropTemps(db: Db): void {
  db.exec('DROP TABLE IF EXISTS temp._sluice_pi; DROP TABLE IF EXISTS temp._sluice_img; DROP TABLE IF EXISTS temp._sluice_tr; DROP TABLE IF EXISTS temp._sluice_w');
}

function findMismatch(db: Db, p: CompiledProjection, target: string, k: string[], img: Images): RelationalMismatch | undefined {
  const keyJson = (row: unknown[]) => row.slice(0, k.length).map((x) => toJsonValue(fromDriver(x ?? null)));
  // One pass over the transitions in (key, seq, sub) order. A transition
  // with no previous row of its key (rowid - 1) is the key's first: it must
  // match the target row as it is. Any other must start where the previous
  // one ended.
  const tk = p.key.map((c) => `t.${quoteIdent(c)}`);
  // A lookup key is NULL (no B-tree seek at all) where the row is not needed:
  // the target only for a key's first transition, images only where compared.
  // (A NULL-or-value CASE takes the target column's affinity and collation,
  // like the key column it stands for, whose values already have them.)
  const onKey = p.key.map((c, j) => `t.${quoteIdent(c)} = CASE WHEN y.rowid IS NULL THEN x.${k[j]} END`).join(' AND ');
  const matchesTarget = p.columns.map((c, i) => sqlEq(`t.${quoteIdent(c.name)}`, img.before('xb', i))).join(' AND ');
  const linked = p.columns.map((_, i) => sqlEq(img.after('ya', i), img.before('xb', i))).join(' AND ');
  const row = db
    .prepare(
      `SELECT ${k.map((c) => `x.${c}`).join(', ')}, x.seq, x.bp, CASE WHEN y.rowid IS NULL THEN ${tk[0]} IS NOT NULL ELSE y.ap END, y.rowid IS NULL AS first
      FROM temp._sluice_tr x LEFT JOIN temp._sluice_tr y ON y.rowid = x.rowid - 1 AND ${sameKey('y', 'x', k)}
      LEFT JOIN ${target} t ON ${onKey}
      LEFT JOIN ${img.join('xb', 'CASE WHEN x.bp = 1 AND (y.rowid IS NULL OR y.ap = 1) THEN x.seq END', 0)}
      LEFT JOIN ${img.join('ya', 'CASE WHEN x.bp = 1 AND y.ap = 1 THEN y.seq END', 1)}
      WHERE CASE WHEN y.rowid IS NULL
        THEN NOT (CASE WHEN x.bp = 0 THEN ${tk[0]} IS NULL ELSE ${tk[0]} IS NOT NULL AND ${matchesTarget} END)
        ELSE NOT (y.ap = x.bp AND (x.bp = 0 OR (${linked}))) END
      ORDER BY x.seq, first DESC, x.rowid LIMIT 1`,
    )
    .raw()
    .get() as unknown[] | undefined;
  if (row === undefined) return undefined;
  // present: the target row exists (first) or the previous transition ended present (chain).
  const bp = Number(row[k.length + 1]);
  const present = Number(row[k.length + 2]);
  const where = Number(row[k.length + 3]) === 1 ? 'target' : 'batch';
  // At one seq a target mismatch is reported before a chain mismatch, as before.
  return { seq: Number(row[k.length]), key: keyJson(row), reason: bp === 0 && present === 1 ? 'UNCAPTURED_REPLACE' : 'TARGET_DIVERGED', where };
}
