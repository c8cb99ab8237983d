import { foldIdent } from '../sqlite/index.ts';
import { decodeCursor } from '../feed/index.ts';
import type { CompiledProjection } from '../projection/index.ts';
import type { ProjectionRecord } from '../apply/target/index.ts';
import { suspension, type Suspension } from '../apply/projections/index.ts';

/*
 * A stream (an export file, a broker's stream) carries the tables its
 * cursors cover: those its source captured when its snapshot was made
 * (export --table: the ones named). A projection of a table the stream no
 * longer carries (`sluice disable SRC TABLE` took capture off it, and the
 * publisher published a new snapshot without it) gets none of its events:
 * applying the stream's batches would move its cursor past changes it never
 * saw, and the snapshot does not rebuild it, so every batch after stopped on
 * it with BATCH_GAP. It is suspended with TABLE_UNTRACKED instead, and the
 * others go on, as sync suspends a projection of a table its source does
 * not capture (apply/projections/cursor-break.ts unbuildable).
 */

/** The tables a marker's cursor covers (the ones its stream carries from there), folded as SQLite folds names. */
export function carriedTables(cursor: string): ReadonlySet<string> {
  return new Set(decodeCursor(cursor).tables.map(foldIdent));
}

/** Whether the stream carries the table of projection `p` (carriedTables). */
export function carries(carried: ReadonlySet<string>, p: CompiledProjection): boolean {
  return carried.has(foldIdent(p.source.table));
}

/** TABLE_UNTRACKED for `p` (stored as `rec`), whose table the stream at `at` no longer carries from `seq`. */
export function untrackedSuspension(
  p: CompiledProjection,
  rec: ProjectionRecord,
  at: string,
  seq: number,
  carried: ReadonlySet<string>,
): Suspension {
  const table = p.source.table;
  const list = carried.size === 0 ? 'none' : [...carried].join(', ');
  return suspension('TABLE_UNTRACKED', {
    table,
    message: `Table ${table} is not among the tables ${at} carries from seq ${seq} (${list}): its capture was taken off on the source (sluice disable), or the file was exported without it (--table), so projection ${p.name}, at seq ${rec.seq}, gets none of its events. Remove the projection and its tables (sluice drop TARGET ${p.name}); to follow the table again, capture it on the source (sluice enable SRC ${table}) and build the projection again from a snapshot that holds it (a publisher publishes one once the source captures it again: STREAM_TABLES_ADDED).`,
  });
}
