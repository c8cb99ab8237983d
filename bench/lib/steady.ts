/*
 * The bare-trigger floor and steady-state journals, for bench/capture-overhead.ts
 * and bench/journal-steady.ts (bench only).
 *
 * - The floor (DESIGN.md "Performance targets"): one AFTER trigger per
 *   operation that appends the event's images to a journal of sluice's shape
 *   (`seq INTEGER PRIMARY KEY, tid, op, ts, c0..c9`, images laid out as in
 *   docs/journal.md) and julianday('now'), and nothing else: no WHEN, no
 *   last-seq upkeep, no pruning (DESIGN.md "Performance targets", restated
 *   for issue 23). `FLOOR_NO_CLOCK` is the same with a constant ts, to show
 *   what the clock costs; `KEYS_FLOOR` appends the key instead of the images.
 * - Steady state: the journal pre-filled past its retention bound before
 *   timing, so every 1,024th event of the timed phases prunes, as in a
 *   long-lived source. The fill is one INSERT ... SELECT from a recursive CTE
 *   straight into the journal; the journal's own prune trigger runs for those
 *   rows, so `pruned_through` is exactly what a real writer would have left.
 */
import type { Db } from '../../src/sqlite/connection.ts';
import { enable } from '../../src/capture/enable.ts';
import { DEFAULT_RETENTION } from '../../src/capture/schema.ts';
import type { PairedResults, PhaseTimes, Metric, Variant } from './workload.ts';
import { medianTimes, roundRatios } from './workload.ts';

/** t's columns, in table order (bench/lib/workload.ts TABLE_DDL). */
export const T_COLUMNS = ['id', 'name', 'n', 'r', 'b'] as const;

/** Events written past the retention bound before timing (8 prune intervals). */
export const WARM_PAST = 8 * 1024;

const cols = (from: number, count: number) => Array.from({ length: count }, (_, i) => `c${from + i}`);

/**
 * The floor's DDL: journal `j` of sluice's shape and three bare append
 * triggers. `columns`: what each event holds (t's columns: the images;
 * `['id']`: the keys floor).
 */
export function floorDdl(ts: string, columns: readonly string[] = T_COLUMNS): string[] {
  const n = columns.length;
  const refs = (prefix: 'NEW' | 'OLD') => columns.map((c) => `${prefix}."${c}"`);
  const row = (op: number, values: readonly string[]) =>
    `INSERT INTO j (tid, op, ts, ${cols(0, values.length).join(', ')}) VALUES (1, ${op}, ${ts}, ${values.join(', ')});`;
  return [
    `CREATE TABLE j (seq INTEGER PRIMARY KEY, tid, op, ts, ${cols(0, 2 * n).join(', ')})`,
    `CREATE TRIGGER j_ins AFTER INSERT ON t BEGIN ${row(1, refs('NEW'))} END`,
    `CREATE TRIGGER j_upd AFTER UPDATE ON t BEGIN ${row(2, [...refs('OLD'), ...refs('NEW')])} END`,
    `CREATE TRIGGER j_del AFTER DELETE ON t BEGIN ${row(3, refs('OLD'))} END`,
  ];
}

/** The clock of the floors, as DESIGN.md "Performance targets" states it. */
export const FLOOR_CLOCK_SQL = "julianday('now')";

/** The bare-trigger floor the capture targets are judged against: images and julianday('now'), nothing else. */
export const FLOOR: Variant = {
  name: 'floor',
  note: "bare-trigger floor: one AFTER trigger per op appending the images and julianday('now'), nothing else",
  setup: (db) => {
    for (const sql of floorDdl(FLOOR_CLOCK_SQL)) db.exec(sql);
  },
};

/** The floor without its clock (ts a constant): what the one function call costs, reported, not judged. */
export const FLOOR_NO_CLOCK: Variant = {
  name: 'floor-noclock',
  note: 'the floor with ts = 0.0 (no clock: not valid, shows what the clock costs)',
  setup: (db) => {
    for (const sql of floorDdl('0.0')) db.exec(sql);
  },
};

/** The keys-mode floor: the same triggers appending the key and the clock. */
export const KEYS_FLOOR: Variant = {
  name: 'keys-floor',
  note: "bare keys journal: one AFTER trigger per op appending the key and julianday('now')",
  setup: (db) => {
    for (const sql of floorDdl(FLOOR_CLOCK_SQL, ['id'])) db.exec(sql);
  },
};

/**
 * Appends `count` insert events of t's shape (32-byte blobs, like the
 * workload) to `journal` with seq 1..count, in one statement. Triggers on the
 * journal (sluice's prune trigger) fire for every row.
 */
export function fillJournal(db: Db, count: number, journal = '_sluice_journal'): void {
  db.exec('BEGIN');
  db.prepare(
    `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?)
     INSERT INTO ${journal} (seq, tid, op, ts, c0, c1, c2, c3, c4)
     SELECT i, 1, 1, julianday(), i, 'name-' || i, i, i / 3.0, randomblob(32) FROM s`,
  ).run(count);
  db.exec('COMMIT');
}

/** sluice's journal after enable(): keeps `_sluice_last` in step with a direct fill. */
export function fillSluice(db: Db, count: number): void {
  fillJournal(db, count);
  db.prepare('UPDATE _sluice_last SET seq = ? WHERE tid = 1').run(count);
}

const journalStats = (db: Db) =>
  db
    .prepare(
      'SELECT count(*) AS c, coalesce(min(seq), 0) AS lo, coalesce(max(seq), 0) AS hi, (SELECT pruned_through FROM _sluice_state) AS p, (SELECT retention FROM _sluice_state) AS r FROM _sluice_journal',
    )
    .get() as Record<'c' | 'lo' | 'hi' | 'p' | 'r', bigint>;

/**
 * A sluice images-mode variant on a journal at its retention bound: enable()
 * with `retention`, then `retention + WARM_PAST` events filled. The check
 * after the timed phases: the newest seq is the fill plus 3 events a row,
 * the journal holds what the retention allows, and `pruned_through` is
 * exactly where the oldest surviving event starts.
 */
export function steadySluice(name: string, retention: number, rows: number): Variant {
  const filled = retention + WARM_PAST;
  return {
    name,
    note: `sluice images, retention ${retention}, journal filled to ${filled} events before timing`,
    setup: (db) => {
      enable(db, ['t'], retention === DEFAULT_RETENTION ? {} : { retention });
      fillSluice(db, filled);
    },
    check: (db) => {
      const s = journalStats(db);
      const hi = Number(s.hi);
      const want = filled + 3 * rows;
      if (hi !== want) return `newest seq ${hi}, expected ${want}`;
      if (Number(s.r) !== retention) return `retention ${s.r}, expected ${retention}`;
      if (Number(s.lo) !== Number(s.p) + 1) return `oldest seq ${s.lo} but pruned_through ${s.p}`;
      if (Number(s.c) !== hi - Number(s.p) || Number(s.c) > retention + 1024) return `${s.c} events kept for retention ${retention}`;
      return undefined;
    },
  };
}

/** Per round, (a / its paired baseline) / (b / its paired baseline), median over rounds: a against b in the same run. */
export function ratioOver(res: PairedResults, a: string, b: string, metric: Metric = 'wall'): PhaseTimes {
  const ra = roundRatios(res, a, metric);
  const rb = roundRatios(res, b, metric);
  return medianTimes(
    ra.map((x, i) => {
      const y = rb[i] as PhaseTimes;
      return { insert: x.insert / y.insert, update: x.update / y.update, delete: x.delete / y.delete };
    }),
  );
}
