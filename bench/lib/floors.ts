/*
 * The floors the benches judge sluice against, in one place, fixed. A ratio
 * against a floor is only honest while the floor stays what it was: change
 * one of these and the report (bench/lib/report.ts) compares its absolute
 * speed with the previous report's and flags it when it got slower, so a
 * ratio never improves because its floor did worse. Each bench prints the
 * floor's own speed (Figure.floor).
 *
 * - Capture: the bare-trigger floor (one AFTER trigger per op appending both
 *   images and the clock) is bench/lib/steady.ts's FLOOR / floorDdl, the
 *   chronicle-style triggers bench/lib/workload.ts's chronicleDdl.
 * - Apply (bench/apply.ts): the read floor and the write floor below.
 * - Snapshot (bench/feed.ts, bench/rebuild.ts): a raw INSERT … SELECT.
 */

/** The read floor: one pass reading every column of a range of journal rows once (max() of each), nothing written. */
export function journalReadFloorSql(columns: readonly string[]): string {
  return `SELECT count(*), ${columns.map((c) => `max(${c})`).join(', ')} FROM main._sluice_journal WHERE seq > ? AND seq <= ?`;
}

/**
 * The write floor's setup (not timed): the keys a range of t's events
 * touch (the key of each event, and an update's new key in c5), each with
 * whether the source still has it, into temp.floor_keys.
 */
export function writeFloorKeysSql(range: string): readonly string[] {
  return [
    'CREATE TEMP TABLE floor_keys (k INTEGER PRIMARY KEY, present INTEGER NOT NULL)',
    `INSERT OR IGNORE INTO temp.floor_keys SELECT k, EXISTS (SELECT 1 FROM main.t WHERE id = k) FROM (
    SELECT c0 AS k FROM main._sluice_journal WHERE ${range} UNION ALL SELECT c5 FROM main._sluice_journal WHERE ${range} AND op = 2) ORDER BY k`,
  ];
}

/** The write floor (timed, in one transaction): keys gone deleted, the final row of every other key written, no before-image read. */
export const WRITE_FLOOR_SQL: readonly string[] = [
  'DELETE FROM tgt.t WHERE id IN (SELECT k FROM temp.floor_keys WHERE present = 0)',
  'INSERT OR REPLACE INTO tgt.t SELECT t.* FROM temp.floor_keys f CROSS JOIN main.t t ON t.id = f.k WHERE f.present = 1',
];

/** The snapshot floor: every row of the source's t copied by SQLite alone (source attached as `src`). */
export const RAW_COPY_SQL = 'INSERT INTO main.t SELECT * FROM src.t';
