import type { Db } from '../../../sqlite/index.ts';
import { quoteIdent, cachedStatement, workTable, writeTransactionSync } from '../../../sqlite/index.ts';
import { errorCode } from '../../../errors.ts';
import type { CompiledProjection } from '../../compiled.ts';
import { allOf, keyIndexes, sameKeyBothSides, sqlEq, type Images } from './images.ts';

/*
 * The plain apply for a mirror batch that touches each target key once
 * (bench/apply.ts, "once per key"): no net table, no grouping. With every
 * key touched by one event, the events do not depend on each other, so each
 * is applied straight to the target, its before-image check folded into the
 * write that needs the row:
 *
 *  0. the batch's target keys (an event's before key, and its after key
 *     when the event changes it) go into a work table keyed like the
 *     target; a second one is a duplicate, which stops the statement at
 *     once (a constraint error): the batch is not once per key;
 *  1. a DELETE of the rows whose before-image the event leaving them
 *     absent (a delete, or a key change's old key) finds equal, by storage
 *     class and bytes;
 *  2. an UPDATE, in place, of the rows whose before-image an update that
 *     keeps the key (same bytes) finds equal;
 *  3. a plain INSERT (no REPLACE) of the after-images of inserts and key
 *     changes' new keys: a key already present fails it.
 *
 * Every key is one event's, so the DELETE and the UPDATE each change at
 * most one row per event of theirs, and the INSERT all of its events or
 * none: the three counts add up to the number of keys exactly when every
 * check held. Anything else (a count short, a constraint error: a key
 * present, a user's UNIQUE index the order of these writes trips) rolls the
 * savepoint back, and `undefined` sends the batch to the grouped path
 * (relational/net.ts, then the reference), which decides it as before. So
 * this path only ever applies a batch the grouped path would have applied,
 * the same way, and is held to it by the property test
 * (test/projection/kinds/relational/relational-set-apply.property.test.ts).
 *
 * Mirror only: its images are the journal's own columns, compared and
 * written as they are.
 */
export function applyPlain(db: Db, schema: string, p: CompiledProjection, img: Images): { transitions: number } | undefined {
  const s = img.stream;
  // The savepoint needs the caller's transaction (it must not commit on its own); an event marked unread is the grouped path's.
  if (!p.identity || !db.inTransaction || s.writes !== '1') return undefined;
  const target = `${quoteIdent(schema)}.${quoteIdent(p.targetTable)}`;
  const keyIdx = keyIndexes(p);
  const k = keyIdx.map((_, j) => `k${j}`);
  const keys = workTable(
    db,
    '_sluice_once',
    `${keyIdx.map((i, j) => `${k[j]} ${p.columns[i]?.decl ?? ''}`).join(', ')}, PRIMARY KEY (${k.join(', ')})`,
    { withoutRowid: true },
  );
  const same = sameKeyBothSides(img);
  const [has0, has1] = s.has;
  let count: number;
  try {
    count = cachedStatement(
      db,
      `INSERT INTO ${keys} (${k.join(', ')})
      SELECT ${k.map((_, j) => `CASE s.sub WHEN 0 THEN ${s.key[0][j]} ELSE ${s.key[1][j]} END`).join(', ')}
        FROM ${s.events} CROSS JOIN (SELECT 0 AS sub UNION ALL SELECT 1) s
       WHERE CASE s.sub WHEN 0 THEN ${has0} ELSE ${has1} AND NOT (${has0} AND ${same}) END`,
    ).run(img.params).changes;
  } catch (err) {
    if (isConstraint(err) && db.inTransaction) return undefined;
    throw err;
  }
  const cols = p.columns.map((c) => quoteIdent(c.name));
  const onKey = keyIdx.map((i, j) => `t.${cols[i]} = ${s.key[0][j]}`).join(' AND ');
  const matches = allOf(p.columns.map((_, i) => sqlEq(`t.${cols[i]}`, img.before('e', i))));
  const rowOf = p.source.withoutRowid ? `(${keyIdx.map((i) => cols[i]).join(', ')})` : 'rowid';
  const rowSel = p.source.withoutRowid ? keyIdx.map((i) => `t.${cols[i]}`).join(', ') : 't.rowid';
  const nonKey = p.columns.map((_, i) => i).filter((i) => !keyIdx.includes(i));
  // A table of key columns only: an update that keeps the key writes them again (the same bytes).
  const set = (nonKey.length > 0 ? nonKey : keyIdx).map((i) => `${cols[i]} = ${img.after('e', i)}`).join(', ');
  try {
    return writeTransactionSync(
      db,
      () => {
        const deleted = cachedStatement(
          db,
          `DELETE FROM ${target} WHERE ${rowOf} IN (SELECT ${rowSel} FROM ${s.events} CROSS JOIN ${target} t ON ${onKey}
            WHERE ${has0} AND NOT (${has1} AND ${same}) AND ${matches})`,
        ).run(img.params).changes;
        const updated = cachedStatement(
          db,
          `UPDATE ${target} AS t SET ${set} FROM ${s.events} WHERE ${onKey} AND ${has0} AND ${has1} AND ${same} AND ${matches}`,
        ).run(img.params).changes;
        const inserted = cachedStatement(
          db,
          `INSERT INTO ${target} (${cols.join(', ')}) SELECT ${p.columns.map((_, i) => img.after('e', i)).join(', ')} FROM ${s.events}
            WHERE ${has1} AND NOT (${has0} AND ${same})`,
        ).run(img.params).changes;
        return deleted + updated + inserted === count ? { transitions: count } : undefined;
      },
      { keep: (r) => r !== undefined },
    );
  } catch (err) {
    // (Rolled back to the savepoint; a conflict clause that ended the whole transaction leaves nothing to fall back in.)
    if (isConstraint(err) && db.inTransaction) return undefined;
    throw err;
  }
}

function isConstraint(err: unknown): boolean {
  return String(errorCode(err) ?? '').startsWith('SQLITE_CONSTRAINT');
}
