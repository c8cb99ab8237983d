import type { Db } from '../sqlite/connection.ts';
import { quoteIdent } from '../sqlite/quote.ts';
import { journalEvents } from '../feed/event-relation.ts';
import { columnDecl, type CompiledProjection } from '../projection/compile.ts';

/** The temp table rewindToCursor fills: the source table's columns, with their types and collations. */
export const REWOUND_TABLE = 'temp._sluice_vat';

/**
 * Fills REWOUND_TABLE with the rows of the projection's source table as they
 * were at seq `lo`, for the keys the journal's events in (lo, hw] touch (a
 * key whose first event there is an insert, or an update onto it, did not
 * exist at `lo`): the first event touching a key as its old identity (delete,
 * or update from it) holds its before image. Needs every journal row of
 * (lo, hw] (nothing pruned past `lo`) and the key among the captured
 * columns; returns false without it.
 */
export function rewindToCursor(db: Db, p: CompiledProjection, tid: number, lo: number, hw: number): boolean {
  const n = p.source.columns.length;
  const pos = p.source.keyColumns.map((kc) => p.source.columns.findIndex((c) => c.name === kc));
  if (pos.length === 0 || pos.some((x) => x < 0)) return false;
  db.exec(`DROP TABLE IF EXISTS ${REWOUND_TABLE}`);
  db.exec(`CREATE TEMP TABLE _sluice_vat (${p.source.columns.map((c) => `${quoteIdent(c.name)} ${columnDecl(c)}`).join(', ')})`);
  const ev = journalEvents(tid, n, lo, hw);
  const image = p.source.columns.map((_, i) => ev.before('', i));
  const names = p.source.columns.map((_, i) => `v${i}`);
  const oldKey = pos.map((x, i) => `${ev.before('', x)} AS r${i}`).join(', ');
  const newKey = pos.map((x, i) => `${ev.after('', x)} AS r${i}`).join(', ');
  const r = pos.map((_, i) => `r${i}`).join(', ');
  db.prepare(
    `INSERT INTO ${REWOUND_TABLE} SELECT ${names.join(', ')} FROM (
    SELECT *, row_number() OVER (PARTITION BY ${r} ORDER BY seq, present DESC) AS rn FROM (
      SELECT seq, 1 AS present, ${oldKey}, ${image.map((v, i) => `${v} AS v${i}`).join(', ')} FROM (${ev.sql}) WHERE ${ev.hasBefore('')}
      UNION ALL
      SELECT seq, 0 AS present, ${newKey}, ${image.map((_, i) => `NULL AS v${i}`).join(', ')} FROM (${ev.sql}) WHERE ${ev.hasAfter('')}
    )
  ) WHERE rn = 1 AND present = 1`,
  ).run(ev.params);
  return true;
}
