import type { Db } from '../../../sqlite/index.ts';
import type { EventRelation } from '../../../feed/index.ts';
import { cachedStatement, emptyWorkTables } from '../../../sqlite/index.ts';
import { columnDecl, type CompiledFts5 } from '../../compiled.ts';
import { allOf, journalImages, joinImage, sqlEq } from '../relational/images.ts';
import { buildNet } from '../relational/net.ts';
import { ftsNames } from './layout.ts';

/*
 * The fast apply for an fts5 projection, set-based like mirror and map
 * (relational/net.ts): the batch's net transition per source key, with each
 * key's chain checked as the events stream by; then one read-only check of
 * each key's first before against the key table (`<target>_src`: the key's
 * presence, and for external content its stored values, by storage class
 * and bytes); then the writes, each one statement over all keys:
 *
 *  1. FTS5 'delete' of every key that was present, with the values it was
 *     indexed with (the stored ones, or for contentless the before-image);
 *  2. the key table: keys that end absent deleted, those that stay updated
 *     (new key bytes under the key's collation, new values), new ones
 *     inserted (rowid = the key for an INTEGER PRIMARY KEY source);
 *  3. the index entries of every key that ends present, with its last
 *     after-image.
 *
 * The index then answers queries as if each event had been applied in turn.
 * When the batch is not clean this writes nothing and returns `undefined`:
 * the per-event path (applyFtsEvents) then applies it or reports the first
 * mismatch.
 */
export function applyFtsNet(db: Db, schema: string, p: CompiledFts5, events: EventRelation): { applied: number } | undefined {
  try {
    return applyNet(db, schema, p, events);
  } finally {
    emptyWorkTables(db);
  }
}

function applyNet(db: Db, schema: string, p: CompiledFts5, events: EventRelation): { applied: number } | undefined {
  const n = ftsNames(schema, p);
  const sourceIndex = (name: string) => p.source.columns.findIndex((c) => c.name === name);
  const keyIdx = p.key.map(sourceIndex);
  const valueIdx = p.columns.map((c) => sourceIndex(c.from ?? c.name));
  if ([...keyIdx, ...valueIdx].some((i) => i < 0)) return undefined;
  // Target columns of the images: the key columns, then the indexed values.
  const img = journalImages(events, [...keyIdx, ...valueIdx], keyIdx);
  const j = keyIdx.length;
  const keyDecls = keyIdx.map((i) => columnDecl(p.source.columns[i] as { type: string; collate: string }));
  const net = buildNet(db, keyDecls, img, j + valueIdx.length);
  if (net === undefined) return undefined;
  const x = net.table;
  const run = (sql: string) => cachedStatement(db, sql).run(img.params);

  const onKey = n.keys.map((c, i) => `c.${c} = x.k${i}`).join(' AND ');
  const before = valueIdx.map((_, i) => img.before('b', j + i));
  const after = valueIdx.map((_, i) => img.after('a', j + i));
  const stored = n.cols.map((c) => `c.${c}`);
  // The stored key is found through its collation, then compared by bytes
  // like the values ('abc' stored for a before-image of 'ABC' is diverged).
  const keysMatch = allOf(n.keys.map((c, i) => sqlEq(`c.${c}`, img.before('b', i))));
  const valuesMatch = n.external ? allOf(n.cols.map((c, i) => sqlEq(`c.${c}`, before[i] as string))) : '1';
  const violation = cachedStatement(
    db,
    `SELECT 1 FROM ${x} x LEFT JOIN ${n.content} c ON ${onKey}
      LEFT JOIN ${joinImage(img, 'b', 'CASE WHEN x.fbp = 1 THEN x.fseq END', 0)}
      WHERE CASE WHEN x.fbp = 1 THEN c.rowid IS NULL OR NOT (${keysMatch} AND ${valuesMatch}) ELSE c.rowid IS NOT NULL END LIMIT 1`,
  ).get(img.params);
  if (violation !== undefined) return undefined;

  const contentless = n.external ? '' : `CROSS JOIN ${joinImage(img, 'b', 'x.fseq', 0)}`;
  run(`INSERT INTO ${n.fts} (${n.cmd}, rowid, ${n.cols.join(', ')})
    SELECT 'delete', c.rowid, ${(n.external ? stored : before).join(', ')} FROM ${x} x CROSS JOIN ${n.content} c ON ${onKey} ${contentless} WHERE x.fbp = 1 AND x.wr = 1`);
  run(
    `DELETE FROM ${n.content} WHERE rowid IN (SELECT c.rowid FROM ${x} x CROSS JOIN ${n.content} c ON ${onKey} WHERE x.fbp = 1 AND x.lap = 0 AND x.wr = 1)`,
  );
  const set = [...n.keys.map((c, i) => `${c} = ${img.after('a', i)}`), ...(n.external ? n.cols.map((c, i) => `${c} = ${after[i]}`) : [])];
  run(
    `UPDATE ${n.content} AS c SET ${set.join(', ')} FROM ${x} x CROSS JOIN ${joinImage(img, 'a', 'x.lseq', 1)} WHERE x.fbp = 1 AND x.lap = 1 AND x.wr = 1 AND ${onKey}`,
  );
  const newKeys = n.keys.map((_, i) => img.after('a', i));
  run(`INSERT INTO ${n.content} (${n.intKey ? 'rowid, ' : ''}${[...n.keys, ...(n.external ? n.cols : [])].join(', ')})
    SELECT ${n.intKey ? `${newKeys[0]}, ` : ''}${[...newKeys, ...(n.external ? after : [])].join(', ')}
      FROM ${x} x CROSS JOIN ${joinImage(img, 'a', 'x.lseq', 1)} WHERE x.fbp = 0 AND x.lap = 1 AND x.wr = 1`);
  run(`INSERT INTO ${n.fts} (rowid, ${n.cols.join(', ')})
    SELECT c.rowid, ${after.join(', ')} FROM ${x} x CROSS JOIN ${n.content} c ON ${onKey} CROSS JOIN ${joinImage(img, 'a', 'x.lseq', 1)} WHERE x.lap = 1 AND x.wr = 1`);
  return { applied: Number(cachedStatement(db, `SELECT count(*) FROM (${events.sql})`, 'pluck').get(events.params)) };
}
