import type { Db } from '../../../sqlite/index.ts';
import { collationSql, quoteIdent, fromDriver, toJsonValue, type JsonValue } from '../../../sqlite/index.ts';
import type { Reason } from '../../../reasons.ts';
import type { CompiledProjection } from '../../compiled.ts';
import { allOf, joinImage, keyIndexes, sameKeyBothSides, sqlEq, type Images } from './images.ts';

/*
 * The reference apply for mirror and map: it finds the first mismatch of a
 * batch exactly (by seq, target before chain), and only then writes. The
 * fast path (relational/net.ts) runs first; this one runs when the fast path
 * suspects a mismatch, so that what is reported is always decided here.
 *
 *  1. events become per-key transitions (before -> after), in ONE narrow
 *     temp table (key, seq, sub, bp, ap) filled in (key, seq, sub) order, so
 *     that its rowids number each key's transitions consecutively: "the
 *     previous transition of this key" is rowid - 1 with an equal key, and
 *     the first / last of a key are rows whose neighbour has another key. A
 *     key change is two transitions (old key -> absent, absent -> new key);
 *  2. the chain of transitions of each key must link up (each before equals
 *     the previous after), and the first before must equal the target row as
 *     it is, compared by storage class and bytes;
 *  3. the last transition of each key is written (delete or replace).
 */
export function applyByTransitions(db: Db, schema: string, p: CompiledProjection, img: Images, strict: boolean): RelationalResult {
  const target = `${quoteIdent(schema)}.${quoteIdent(p.targetTable)}`;
  const keyIdx = keyIndexes(p);
  const keyDecl = keyIdx.map((i) => p.columns[i]?.decl ?? '');
  const k = keyIdx.map((_, j) => `k${j}`);
  const s = img.stream;

  db.exec('DROP TABLE IF EXISTS temp._sluice_tr');
  // Keys typed and collated like the target key: ORDER BY and the neighbour
  // tests group keys exactly as the target's primary key does.
  db.exec(
    `CREATE TEMP TABLE _sluice_tr (${k.map((x, j) => `${x} ${keyDecl[j]}`).join(', ')}, seq INTEGER NOT NULL, sub INTEGER NOT NULL, bp INTEGER NOT NULL, ap INTEGER NOT NULL)`,
  );
  // This ORDER BY sorts the SELECT's own columns (journal or image values,
  // BINARY), not _sluice_tr's: name the key collation, or 'abc' and 'ABC' of
  // a NOCASE key are not adjacent, and a case-only key change then looks like
  // an uncaptured REPLACE (the insert of 'ABC' sorts before the delete of 'abc').
  const keyCollate = keyIdx.map((i) => p.source.columns.find((c) => c.name === p.columns[i]?.from)?.collate ?? 'BINARY');
  const same = sameKeyBothSides(img);
  db.prepare(
    `INSERT INTO temp._sluice_tr (${k.join(', ')}, seq, sub, bp, ap)
    SELECT * FROM (
      SELECT ${s.key[0].map((x, j) => `${x} AS k${j}`).join(', ')}, e.seq AS seq, 0 AS sub, ${s.inTarget[0]}, CASE WHEN ${s.has[1]} AND ${same} THEN ${s.inTarget[1]} ELSE 0 END
        FROM ${s.events} ${s.joins} WHERE ${s.has[0]}
      UNION ALL
      SELECT ${s.key[1].join(', ')}, e.seq, 1, 0, ${s.inTarget[1]}
        FROM ${s.events} ${s.joins} WHERE ${s.has[1]} AND NOT (${s.has[0]} AND ${same})
    ) ORDER BY ${k.map((x, j) => `${x} COLLATE ${collationSql(keyCollate[j] ?? 'BINARY')}`).join(', ')}, seq, sub`,
  ).run(img.params);
  // Absent -> absent transitions (a map image outside the filter on both sides) are checks, not changes.
  const transitions = Number((db.prepare('SELECT count(*) FROM temp._sluice_tr WHERE bp = 1 OR ap = 1').pluck().get() as bigint) ?? 0n);

  const mismatch = findMismatch(db, p, target, k, img);
  if (mismatch !== undefined) {
    db.exec('DROP TABLE temp._sluice_tr');
    return { transitions, mismatch };
  }

  // The last transition of each key: the next row (rowid + 1) has another key.
  const last = `temp._sluice_tr x LEFT JOIN temp._sluice_tr z ON z.rowid = x.rowid + 1 AND ${sameKey('z', 'x', k)}`;
  const keyList = p.key.map(quoteIdent).join(', ');
  // As in relational/net.ts: with a UNIQUE index a user added, every key of the batch goes first and the rows are inserted plainly.
  db.prepare(
    `DELETE FROM ${target} WHERE (${keyList}) IN (SELECT ${k.map((c) => `x.${c}`).join(', ')} FROM ${last} WHERE z.rowid IS NULL${strict ? '' : ' AND x.ap = 0'})`,
  ).run();
  // CROSS JOIN keeps the image lookup inside the loop over the transitions (by seq), never the other way round.
  db.prepare(
    `INSERT${strict ? '' : ' OR REPLACE'} INTO ${target} (${p.columns.map((c) => quoteIdent(c.name)).join(', ')})
    SELECT ${p.columns.map((_, i) => img.after('e', i)).join(', ')} FROM ${last} CROSS JOIN ${joinImage(img, 'e', 'x.seq', 1)} WHERE z.rowid IS NULL AND x.ap = 1`,
  ).run(img.params);
  db.exec('DROP TABLE temp._sluice_tr');
  return { transitions };
}

/** Same key as the target's primary key sees it (the key columns' collation), NULL-safe like PARTITION BY. */
function sameKey(l: string, r: string, k: readonly string[]): string {
  return k.map((c) => `${l}.${c} IS ${r}.${c}`).join(' AND ');
}

function findMismatch(db: Db, p: CompiledProjection, target: string, k: string[], img: Images): RelationalResult['mismatch'] {
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
  const matchesTarget = allOf(p.columns.map((c, i) => sqlEq(`t.${quoteIdent(c.name)}`, img.before('xb', i))));
  const linked = allOf(p.columns.map((_, i) => sqlEq(img.after('ya', i), img.before('xb', i))));
  const row = db
    .prepare(
      `SELECT ${k.map((c) => `x.${c}`).join(', ')}, x.seq, x.bp, CASE WHEN y.rowid IS NULL THEN ${tk[0]} IS NOT NULL ELSE y.ap END, y.rowid IS NULL AS first
      FROM temp._sluice_tr x LEFT JOIN temp._sluice_tr y ON y.rowid = x.rowid - 1 AND ${sameKey('y', 'x', k)}
      LEFT JOIN ${target} t ON ${onKey}
      LEFT JOIN ${joinImage(img, 'xb', 'CASE WHEN x.bp = 1 AND (y.rowid IS NULL OR y.ap = 1) THEN x.seq END', 0)}
      LEFT JOIN ${joinImage(img, 'ya', 'CASE WHEN x.bp = 1 AND y.ap = 1 THEN y.seq END', 1)}
      WHERE CASE WHEN y.rowid IS NULL
        THEN NOT (CASE WHEN x.bp = 0 THEN ${tk[0]} IS NULL ELSE ${tk[0]} IS NOT NULL AND ${matchesTarget} END)
        ELSE NOT (y.ap = x.bp AND (x.bp = 0 OR (${linked}))) END
      ORDER BY x.seq, first DESC, x.rowid LIMIT 1`,
    )
    .raw()
    .get(img.params) as unknown[] | undefined;
  if (row === undefined) return undefined;
  // present: the target row exists (first) or the previous transition ended present (chain).
  const bp = Number(row[k.length + 1]);
  const present = Number(row[k.length + 2]);
  const where = Number(row[k.length + 3]) === 1 ? 'target' : 'batch';
  // At one seq a target mismatch is reported before a chain mismatch, as before.
  return {
    seq: Number(row[k.length]),
    key: keyJson(row),
    reason: bp === 0 && present === 1 ? 'UNCAPTURED_REPLACE' : 'TARGET_DIVERGED',
    where,
  };
}

export interface RelationalMismatch {
  readonly seq: number;
  readonly key: readonly JsonValue[];
  /** `UNCAPTURED_REPLACE`: an insert found its key present; `TARGET_DIVERGED`: the before-image differs. */
  readonly reason: Reason<'TARGET_DIVERGED' | 'UNCAPTURED_REPLACE'>;
  readonly where: 'target' | 'batch';
}

export interface RelationalResult {
  readonly transitions: number;
  readonly mismatch?: RelationalMismatch;
  /** Which implementation decided: `fast` applied a clean batch, `reference` found a mismatch or was asked for. */
  readonly decidedBy?: 'fast' | 'reference';
  /** Which fast path applied it: `plain` (each key once, relational/plain.ts) or `grouped` (relational/net.ts). */
  readonly via?: 'plain' | 'grouped';
}
