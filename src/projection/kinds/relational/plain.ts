import type { Db } from '../../../sqlite/index.ts';
import { quoteIdent, cachedStatement, workTable, writeTransactionSync } from '../../../sqlite/index.ts';
import { errorCode } from '../../../errors.ts';
import type { CompiledProjection } from '../../compiled.ts';
import { allOf, keyIndexes, sameKeyBothSides, sqlEq, type Images } from './images.ts';

/*
 * The plain apply for a mirror batch that touches each target key once
 * (bench/apply.ts, "each key once"): no net table, no grouping of events by
 * key. With every key touched by one event, the events do not depend on
 * each other: each before-image is checked against the target as it is,
 * and each event is written straight to it. Events fall in three classes:
 * a delete or a key change's old key leaves its key absent (D), an update
 * that keeps its key bytes rewrites its row (U), an insert or a key
 * change's new key makes a row (I; a key change is in D and in I).
 *
 *  1. One read-only pass over the D and U events (every event with a
 *     before-image) puts the target key of each in a work table keyed like
 *     the target, when its before-image equals the target row by storage
 *     class and bytes, and NULL when not (no row, another row): NULL breaks
 *     the key's NOT NULL and a key there twice its uniqueness, either of
 *     which stops the pass at once. So when it ends, every D and U event
 *     matched its own row, and no two share a key.
 *  2. In a savepoint: an INSERT OR REPLACE of the U events' after-images
 *     (their rows are there, and checked); a plain INSERT of the I events'
 *     after-images, before any D row goes, so that a key present fails it
 *     (a constraint error): one the target holds (an insert the journal
 *     says was new), a U key, a D key (a key deleted and made again, in
 *     either order, is not once per key), or one made twice; then a DELETE
 *     of the D keys, in key order, from the work table.
 *
 * A constraint error in either step undoes the savepoint (step 1 writes
 * nothing but its work table) and sends the batch to the grouped path
 * (relational/net.ts, then the reference), which decides it as before. So
 * this path only ever applies a batch the grouped path would have applied,
 * the same way; the property test
 * (test/projection/kinds/relational/relational-set-apply.property.test.ts)
 * and plain-path-fallback.test.ts hold it to that. A mixed batch leaves
 * step 1 at its first key touched twice or first before-image that an
 * earlier event of the batch made.
 *
 * Mirror only, whose images are the journal's own columns; and not with a
 * user's UNIQUE index on the target (`strict`), where a REPLACE could
 * remove another row.
 */
export function applyPlain(
  db: Db,
  schema: string,
  p: CompiledProjection,
  img: Images,
  strict: boolean,
): { transitions: number } | undefined {
  const s = img.stream;
  // The savepoint needs the caller's transaction (it must not commit on its own); an event marked unread is the grouped path's.
  if (!p.identity || strict || !db.inTransaction || s.writes !== '1') return undefined;
  const sql = plainSql(db, schema, p, img);
  try {
    const found = cachedStatement(db, sql.found).run(img.params).changes;
    return writeTransactionSync(db, () => {
      cachedStatement(db, sql.replace).run(img.params);
      const made = cachedStatement(db, sql.insert).run(img.params).changes;
      cachedStatement(db, sql.remove).run();
      // Every D and U event's key, and every I event's: a key change is two transitions (its old key gone, its new key made), as the grouped path counts them.
      return { transitions: found + made };
    });
  } catch (err) {
    // (Rolled back to the savepoint; a conflict clause that ended the whole transaction leaves nothing to fall back in.)
    if (isConstraint(err) && db.inTransaction) return undefined;
    throw err;
  }
}

/** The statements of the plain path for one projection and event relation. */
interface PlainSql {
  /** Step 1: the D and U events' keys into the work table. */
  readonly found: string;
  /** Step 2: the U events' rows, the I events' rows, the D keys' removal. */
  readonly replace: string;
  readonly insert: string;
  readonly remove: string;
}

/*
 * The SQL of the last batch of each projection, reused while its schema and
 * event relation are the same: made again for every batch, these few KB of
 * text (and the cache's hashing of them) were about a tenth of a follower's
 * pass. A mirror's images are built from the relation alone
 * (journalImages), whose expressions follow from its SQL, so the relation's
 * SQL and the schema decide every statement; the work table is made again
 * on each use when a rollback took it away (workTable).
 */
const lastSql = new WeakMap<
  CompiledProjection,
  { readonly schema: string; readonly events: string; readonly columns: string; readonly sql: PlainSql }
>();

function plainSql(db: Db, schema: string, p: CompiledProjection, img: Images): PlainSql {
  const s = img.stream;
  const known = lastSql.get(p);
  if (known !== undefined && known.schema === schema && known.events === s.events) {
    workTable(db, '_sluice_once', known.columns, { withoutRowid: true }); // (made again if a rollback took it away)
    return known.sql;
  }
  const keyIdx = keyIndexes(p);
  const k = keyIdx.map((_, j) => `k${j}`);
  // WITHOUT ROWID: its key columns are NOT NULL.
  const columns = `${keyIdx.map((i, j) => `${k[j]} ${p.columns[i]?.decl ?? ''}`).join(', ')}, gone INTEGER NOT NULL, PRIMARY KEY (${k.join(', ')})`;
  const checked = workTable(db, '_sluice_once', columns, { withoutRowid: true });
  const target = `${quoteIdent(schema)}.${quoteIdent(p.targetTable)}`;
  const cols = p.columns.map((c) => quoteIdent(c.name));
  const same = sameKeyBothSides(img);
  const [has0, has1] = s.has;
  const onKey = keyIdx.map((i, j) => `t.${cols[i]} = ${s.key[0][j]}`).join(' AND ');
  const matches = allOf(p.columns.map((_, i) => sqlEq(`t.${cols[i]}`, img.before('e', i))));
  const keyList = keyIdx.map((i) => cols[i]).join(', ');
  const values = p.columns.map((_, i) => img.after('e', i)).join(', ');
  const sql: PlainSql = {
    found: `INSERT INTO ${checked} (${k.join(', ')}, gone)
      SELECT ${keyIdx.map((i) => `CASE WHEN ${matches} THEN t.${cols[i]} END`).join(', ')}, CASE WHEN ${has1} AND ${same} THEN 0 ELSE 1 END
        FROM ${s.events} LEFT JOIN ${target} t ON ${onKey} WHERE ${has0}`,
    replace: `INSERT OR REPLACE INTO ${target} (${cols.join(', ')}) SELECT ${values} FROM ${s.events} WHERE ${has0} AND ${has1} AND ${same}`,
    insert: `INSERT INTO ${target} (${cols.join(', ')}) SELECT ${values} FROM ${s.events} WHERE ${has1} AND NOT (${has0} AND ${same})`,
    remove: `DELETE FROM ${target} WHERE (${keyList}) IN (SELECT ${k.join(', ')} FROM ${checked} WHERE gone = 1)`,
  };
  lastSql.set(p, { schema, events: s.events, columns, sql });
  return sql;
}

function isConstraint(err: unknown): boolean {
  return String(errorCode(err) ?? '').startsWith('SQLITE_CONSTRAINT');
}
