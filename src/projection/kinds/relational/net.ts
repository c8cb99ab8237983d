import type { Db } from '../../../sqlite/index.ts';
import { quoteIdent, cachedStatement, workTable } from '../../../sqlite/index.ts';
import type { CompiledProjection } from '../../compiled.ts';
import { allOf, joinImage, keyIndexes, sameKeyBothSides, sqlEq, type Images } from './images.ts';

/*
 * The fast apply for mirror and map (bench/apply.ts): the same per-event
 * checks as the reference (relational/transitions.ts), folded into one pass
 * in seq order and three writes, with no sort.
 *
 *  1. One INSERT … ON CONFLICT DO UPDATE over the events in seq order keeps,
 *     per target key, its net transition: the first transition's seq and
 *     before flag, the last one's seq and after flag. When a key's next
 *     transition arrives, its before must equal the after kept so far (flag,
 *     then image by storage class and bytes); the first break is noted.
 *     That is the reference's chain check, made as the events stream by.
 *  2. One read-only pass in key order checks each key's first before
 *     against the target row as it is.
 *  3. Two writes: a DELETE of the keys that end absent, an INSERT OR REPLACE
 *     of the last after-image of the others.
 *
 * A break or a failed check means the batch does not apply cleanly: nothing
 * is written, and `undefined` says so, for the reference to find and report
 * the first mismatch. So a wrong "clean" is the only thing this path could get wrong,
 * and the property test (test/projection/kinds/relational/relational-set-apply.property.test.ts) compares it with the
 * reference on random batches over tampered targets.
 */
export function applyByNetTransitions(
  db: Db,
  schema: string,
  p: CompiledProjection,
  img: Images,
  strict: boolean,
): { transitions: number } | undefined {
  const target = `${quoteIdent(schema)}.${quoteIdent(p.targetTable)}`;
  const keyIdx = keyIndexes(p);
  const k = keyIdx.map((_, j) => `k${j}`);
  // Keyed like the target (the key columns' declarations carry their collation).
  const net = buildNet(
    db,
    keyIdx.map((i) => p.columns[i]?.decl ?? ''),
    img,
    p.columns.length,
  );
  if (net === undefined) return undefined;
  const { transitions, table } = net;
  // Each key's first before against the target row as it is: present and
  // equal to the before-image, or absent when the key starts absent. One
  // read-only pass in key order (one target seek per key, one image seek
  // where there is a before-image), so the writes below need no check and
  // a failed check has written nothing.
  const onKey = p.key.map((c, j) => `t.${quoteIdent(c)} = x.${k[j]}`).join(' AND ');
  const t0 = `t.${quoteIdent(p.key[0] as string)}`;
  const matches = allOf(p.columns.map((c, i) => sqlEq(`t.${quoteIdent(c.name)}`, img.before('b', i))));
  const violation = cachedStatement(
    db,
    `SELECT 1 FROM ${table} x LEFT JOIN ${target} t ON ${onKey} LEFT JOIN ${joinImage(img, 'b', 'CASE WHEN x.fbp = 1 THEN x.fseq END', 0)}
      WHERE CASE WHEN x.fbp = 1 THEN ${t0} IS NULL OR NOT (${matches}) ELSE ${t0} IS NOT NULL END LIMIT 1`,
  ).get(img.params);
  if (violation !== undefined) return undefined;

  // The keys that end absent go; the others get their last after-image. A
  // REPLACE also gives a key its new bytes where its identity stays ('abc'
  // to 'ABC' under NOCASE, 1 to 1.0 in an untyped key), and the check above
  // made sure it replaces only the row it found, unless a user added a
  // UNIQUE index to the target: then every key that was present goes first,
  // and the rows are inserted plainly.
  cachedStatement(
    db,
    `DELETE FROM ${target} WHERE (${p.key.map(quoteIdent).join(', ')}) IN (SELECT ${k.join(', ')} FROM ${table} WHERE fbp = 1 AND wr = 1${strict ? '' : ' AND lap = 0'})`,
  ).run();
  cachedStatement(
    db,
    `INSERT${strict ? '' : ' OR REPLACE'} INTO ${target} (${p.columns.map((c) => quoteIdent(c.name)).join(', ')})
      SELECT ${p.columns.map((_, i) => img.after('a', i)).join(', ')} FROM ${table} x CROSS JOIN ${joinImage(img, 'a', 'x.lseq', 1)} WHERE x.lap = 1 AND x.wr = 1`,
  ).run(img.params);
  return { transitions };
}

/**
 * Step 1 above: fills a net work table (k0.., fseq, fbp, lseq, lap, cnt,
 * bad; one row per target key; its name is returned as `table`) from the
 * event stream of `img`,
 * keyed by the stream's keys declared as `keyDecls` (type and collation, so
 * that keys the target sees as one are one net transition), checking each
 * key's chain over the `width` target columns of the images. Returns the
 * number of transitions that change something, or `undefined` at a break.
 */
export function buildNet(
  db: Db,
  keyDecls: readonly string[],
  img: Images,
  width: number,
): { transitions: number; table: string } | undefined {
  const k = keyDecls.map((_, j) => `k${j}`);
  const s = img.stream;
  const same = sameKeyBothSides(img);
  const table = workTable(
    db,
    '_sluice_net',
    `${keyDecls.map((d, j) => `${k[j]} ${d}`).join(', ')},
    fseq INTEGER NOT NULL, fbp INTEGER NOT NULL, lseq INTEGER NOT NULL, lap INTEGER NOT NULL, lpos INTEGER NOT NULL, cnt INTEGER NOT NULL, bad INTEGER, wr INTEGER NOT NULL,
    PRIMARY KEY (${k.join(', ')})`,
    { withoutRowid: true },
  );
  // Per event: sub 0, the before-image's key (when the event has one), going
  // to the after-image if that has the same key; sub 1, the after-image's
  // key when it is another one (an insert, or a key change). Rows come in
  // (seq, sub) order: CROSS JOIN keeps the events (and their images) the
  // outer loop, read in seq order, and s the inner one (an ORDER BY would
  // add a sorter per seq). That order is also checked, not assumed (a
  // connection with PRAGMA reverse_unordered_selects would reverse it): a
  // transition that does not come after the key's last one (lpos = 2 seq +
  // sub) is a break, which sends the batch to the reference.
  const bp = `CASE s.sub WHEN 0 THEN ${s.inTarget[0]} ELSE 0 END`;
  const ap = `CASE WHEN s.sub = 1 THEN ${s.inTarget[1]} WHEN ${s.has[1]} AND ${same} THEN ${s.inTarget[1]} ELSE 0 END`;
  const linked = allOf(Array.from({ length: width }, (_, i) => sqlEq(img.after('a', i), img.before('b', i))));
  cachedStatement(
    db,
    `INSERT INTO ${table} (${k.join(', ')}, fseq, fbp, lseq, lap, lpos, cnt, wr)
    SELECT ${k.map((_, j) => `CASE s.sub WHEN 0 THEN ${s.key[0][j]} ELSE ${s.key[1][j]} END`).join(', ')}, e.seq, ${bp}, e.seq, ${ap}, 2 * e.seq + s.sub, (${bp}) OR (${ap}), CASE WHEN ${s.writes} THEN 1 ELSE 0 END
      FROM ${s.events} ${s.joins} CROSS JOIN (SELECT 0 AS sub UNION ALL SELECT 1) s
     WHERE CASE s.sub WHEN 0 THEN ${s.has[0]} ELSE ${s.has[1]} AND NOT (${s.has[0]} AND ${same}) END
    ON CONFLICT (${k.join(', ')}) DO UPDATE SET lseq = excluded.lseq, lap = excluded.lap, lpos = excluded.lpos, cnt = cnt + excluded.cnt, wr = max(wr, excluded.wr),
      bad = coalesce(bad, CASE WHEN excluded.lpos <= lpos OR lap <> excluded.fbp THEN excluded.fseq
        WHEN lap = 1 AND NOT EXISTS (SELECT 1 FROM ${img.rel('a')} CROSS JOIN ${img.rel('b')} WHERE ${img.on('a', `${table}.lseq`, 1)} AND ${img.on('b', 'excluded.fseq', 0)} AND ${linked}) THEN excluded.fseq END)`,
  ).run(img.params);
  const [breaks, transitions] = (cachedStatement(db, `SELECT count(bad), total(cnt) FROM ${table}`, 'raw').get() as number[]).map(
    Number,
  ) as [number, number];
  return breaks > 0 ? undefined : { transitions, table };
}
