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
 *     filter is absent;
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
 * the source images in journal layout c0..c(2n-1)) to the target.
 */
export function applyRelational(db: Db, schema: string, p: CompiledProjection, events: string): RelationalResult {
  const n = p.source.columns.length;
  const m = p.columns.length;
  const target = `${quoteIdent(schema)}.${quoteIdent(p.targetTable)}`;
  const before = Array.from({ length: n }, (_, i) => journalColumn(i));
  const after = Array.from({ length: n }, (_, i) => `CASE WHEN op = ${OP_INSERT} THEN ${journalColumn(i)} ELSE ${journalColumn(n + i)} END`);
  const v = Array.from({ length: m }, (_, i) => `v${i}`);
  const keyIdx = p.key.map((k) => p.columns.findIndex((c) => c.name === k));
  const keyDecl = keyIdx.map((i) => p.columns[i]?.decl ?? '');

  db.exec('DROP TABLE IF EXISTS temp._sluice_pi; DROP TABLE IF EXISTS temp._sluice_img; DROP TABLE IF EXISTS temp._sluice_tr; DROP TABLE IF EXISTS temp._sluice_w');
  db.exec(`CREATE TEMP TABLE _sluice_pi (seq INTEGER NOT NULL, side INTEGER NOT NULL, ${v.join(', ')}, PRIMARY KEY (seq, side)) WITHOUT ROWID`);
  const imagesOf = (cols: string[]) =>
    `SELECT seq, 0, ${before.join(', ')} FROM (${events}) WHERE op IN (${OP_UPDATE}, ${OP_DELETE})
     UNION ALL SELECT seq, 1, ${cols.join(', ')} FROM (${events}) WHERE op IN (${OP_INSERT}, ${OP_UPDATE})`;
  if (p.identity) {
    db.exec(`INSERT INTO temp._sluice_pi ${imagesOf(after)}`);
  } else {
    // Images typed and collated like the source, so expressions evaluate as in the snapshot.
    const imgCols = p.source.columns.map((c) => `${quoteIdent(c.name)} ${c.type}${c.collate === 'BINARY' ? '' : ` COLLATE ${c.collate}`}`);
    db.exec(`CREATE TEMP TABLE _sluice_img (_sluice_seq INTEGER NOT NULL, _sluice_side INTEGER NOT NULL, ${imgCols.join(', ')})`);
    db.exec(`INSERT INTO temp._sluice_img ${imagesOf(after)}`);
    const where = p.filter === null ? '' : ` WHERE ${p.filter}`;
    db.exec(`INSERT INTO temp._sluice_pi SELECT _sluice_seq, _sluice_side, ${p.columns.map((c) => c.expr).join(', ')} FROM temp._sluice_img${where}`);
  }

  const k = keyIdx.map((_, j) => `k${j}`);
  const b = v.map((_, i) => `b${i}`);
  const a = v.map((_, i) => `a${i}`);
  db.exec(`CREATE TEMP TABLE _sluice_tr (seq INTEGER NOT NULL, sub INTEGER NOT NULL, ${k.map((x, j) => `${x} ${keyDecl[j]}`).join(', ')}, bp INTEGER NOT NULL, ${b.join(', ')}, ap INTEGER NOT NULL, ${a.join(', ')})`);
  const same = keyIdx.map((i) => sqlEq(`x.v${i}`, `y.v${i}`)).join(' AND ');
  const nulls = v.map(() => 'NULL').join(', ');
  db.exec(`INSERT INTO temp._sluice_tr
    SELECT x.seq, 0, ${keyIdx.map((i) => `x.v${i}`).join(', ')}, 1, ${v.map((c) => `x.${c}`).join(', ')},
           CASE WHEN y.seq IS NOT NULL AND ${same} THEN 1 ELSE 0 END, ${v.map((c) => `CASE WHEN y.seq IS NOT NULL AND ${same} THEN y.${c} END`).join(', ')}
      FROM temp._sluice_pi x LEFT JOIN temp._sluice_pi y ON y.seq = x.seq AND y.side = 1
     WHERE x.side = 0
    UNION ALL
    SELECT y.seq, 1, ${keyIdx.map((i) => `y.v${i}`).join(', ')}, 0, ${nulls}, 1, ${v.map((c) => `y.${c}`).join(', ')}
      FROM temp._sluice_pi y LEFT JOIN temp._sluice_pi x ON x.seq = y.seq AND x.side = 0
     WHERE y.side = 1 AND (x.seq IS NULL OR NOT (${same}))`);

  const lags = [`lag(ap) OVER w AS pap`, ...a.map((c) => `lag(${c}) OVER w AS p${c}`)];
  db.exec(`CREATE TEMP TABLE _sluice_w AS SELECT *, row_number() OVER w AS rn, count(*) OVER (PARTITION BY ${k.join(', ')}) AS cnt, ${lags.join(', ')}
    FROM temp._sluice_tr WINDOW w AS (PARTITION BY ${k.join(', ')} ORDER BY seq, sub)`);
  const transitions = Number((db.prepare('SELECT count(*) FROM temp._sluice_w').pluck().get() as bigint) ?? 0n);

  const mismatch = findMismatch(db, p, target, k, b, a);
  if (mismatch !== undefined) return { transitions, mismatch };

  const keyList = p.key.map(quoteIdent).join(', ');
  db.exec(`DELETE FROM ${target} WHERE (${keyList}) IN (SELECT ${k.join(', ')} FROM temp._sluice_w WHERE rn = cnt AND ap = 0)`);
  db.exec(`INSERT OR REPLACE INTO ${target} (${p.columns.map((c) => quoteIdent(c.name)).join(', ')}) SELECT ${a.join(', ')} FROM temp._sluice_w WHERE rn = cnt AND ap = 1`);
  dropTemps(db);
  return { transitions };
}

export function dropTemps(db: Db): void {
  db.exec('DROP TABLE IF EXISTS temp._sluice_pi; DROP TABLE IF EXISTS temp._sluice_img; DROP TABLE IF EXISTS temp._sluice_tr; DROP TABLE IF EXISTS temp._sluice_w');
}

function findMismatch(db: Db, p: CompiledProjection, target: string, k: string[], b: string[], a: string[]): RelationalMismatch | undefined {
  const keyJson = (row: unknown[]) => row.slice(0, k.length).map((x) => toJsonValue(fromDriver(x ?? null)));
  // Within the batch: each transition must start where the previous one of its key ended.
  const chain = db
    .prepare(`SELECT ${k.join(', ')}, seq, bp, pap FROM temp._sluice_w WHERE rn > 1 AND NOT (pap = bp AND (bp = 0 OR (${b.map((x, i) => sqlEq(`p${a[i]}`, x)).join(' AND ')}))) ORDER BY seq LIMIT 1`)
    .raw()
    .get() as unknown[] | undefined;
  // Against the target: the first transition of each key must match the row as it is.
  const tk = p.key.map((c) => `t.${quoteIdent(c)}`);
  const onKey = p.key.map((c, j) => `t.${quoteIdent(c)} = w.${k[j]}`).join(' AND ');
  const same = p.columns.map((c, i) => sqlEq(`t.${quoteIdent(c.name)}`, `w.${b[i]}`)).join(' AND ');
  const first = db
    .prepare(`SELECT ${k.map((x) => `w.${x}`).join(', ')}, w.seq, w.bp, ${tk[0]} IS NOT NULL AS present FROM temp._sluice_w w LEFT JOIN ${target} t ON ${onKey}
      WHERE w.rn = 1 AND NOT (CASE WHEN w.bp = 0 THEN ${tk[0]} IS NULL ELSE ${tk[0]} IS NOT NULL AND ${same} END) ORDER BY w.seq LIMIT 1`)
    .raw()
    .get() as unknown[] | undefined;
  const pick = (row: unknown[] | undefined, where: 'target' | 'batch'): RelationalMismatch | undefined => {
    if (row === undefined) return undefined;
    const bp = Number(row[k.length + 1]);
    const present = Number(row[k.length + 2]);
    return { seq: Number(row[k.length]), key: keyJson(row), reason: bp === 0 && present === 1 ? 'UNCAPTURED_REPLACE' : 'TARGET_DIVERGED', where };
  };
  const c = pick(chain, 'batch');
  const f = pick(first, 'target');
  if (c === undefined) return f;
  if (f === undefined) return c;
  return f.seq <= c.seq ? f : c;
}
