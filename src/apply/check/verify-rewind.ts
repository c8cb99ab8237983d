import type { Db } from '../../sqlite/index.ts';
import { allOf, fromDriver, quoteIdent, shellCommand, toJsonValue, type JsonValue, type SqlValue } from '../../sqlite/index.ts';
import { journalEvents, eventsAfter, imagesUnreadableAfter } from '../../feed/index.ts';
import { columnDecl, type CompiledProjection } from '../../projection/index.ts';
import type { StepProgress } from './verify-progress.ts';
import type { ProjectionRecord } from '../target/index.ts';

/**
 * The keys of the projection's source table that the journal's events after
 * its cursor changed, each with the row it had at the cursor: the source
 * table's columns (their types and collations, so a filter or a computed
 * column reads them as it reads the source), CHANGED_SEQ (the key's first
 * event) and CHANGED_HELD (1 when the key held a row at the cursor: its
 * first event had a before image, which the columns hold; 0 when its first
 * event made it, so only the key is set). One row per key, byte for byte
 * (its primary key is the source key in BINARY collation: 'a' and 'A' of a
 * NOCASE key are two keys here, as two journal images). Beside it, what
 * the key's last event left (uncapturedWrites): LAST_SEQ, LAST_HELD (1 when
 * the key holds a row after it: an insert, or an update that kept or made
 * the key) and that row's columns other than the key (lastColumn, declared
 * without a type, so each holds the journal's value as it is).
 */
export const CHANGED_TABLE = 'temp._sluice_changed';
const CHANGED_SEQ = '_sluice_seq';
export const CHANGED_HELD = '_sluice_held';
const LAST_SEQ = '_sluice_last_seq';
const LAST_HELD = '_sluice_last_held';
/** CHANGED_TABLE's column holding source column i (not a key column) of the key's last after-image. */
const lastColumn = (i: number) => quoteIdent(`_sluice_last_${i}`);

/*
 * The rewind fills CHANGED_TABLE in the events' order, which is random over
 * the keys: one descent of its B-tree per event, most of the rewind's time
 * (bench/verify-behind.ts, 500k events over 1M keys: SQLite's
 * sqlite3BtreeIndexMoveto and page-cache lookups led the profile, and
 * sorting the events first, as GROUP BY or a window does, cost as much).
 * With 64 KiB pages instead of 4 KiB the tree is a level shallower, with a
 * sixteenth of the page lookups and splits: the rewind took about 30% less
 * CPU there. The TEMP database (in memory: temp_store) takes its page size
 * when it is first used, so this must run before any TEMP table is made on
 * the connection; later it changes nothing.
 *
 * What bounds it (issue 23, same bench, CPU time, 393k keys changed): of a
 * behind verify's 3.7x the caught-up one, this statement is 1.7x, the
 * changed keys' lookups (changedCounts, verify-exact.ts) 0.9x. Taking the
 * events' keys alone into key order (a bare GROUP BY: no images, nothing
 * written) already costs 1.0-1.2x, and the other way round, each changed
 * key looked up in the events' order (keys de-duplicated in JS, then the
 * target and the source in random order), costs more. The bench reports
 * (caught-up + that sort) / caught-up as the bound of any verify that
 * compares each changed key at the cursor. Also measured, no better: a
 * rowid table for an integer key, INSERT OR IGNORE, GROUP BY with bare
 * columns streamed into the lookups, a window, one scan instead of the
 * UNION's two (2-4%), larger caches, other TEMP page sizes.
 *
 * Each key's last image (LAST_SEQ, LAST_HELD, lastColumn) rides in the same
 * pass: wider rows, and a write for every later event of a key. With it
 * this statement costs about 1.6x what it did (150k spread events on 300k
 * rows, CPU: 130 -> 220 ms), and uncapturedWrites' lookup of each changed
 * key's source row about 55 ms more: a behind verify went from 3.4x to 5.0x
 * the caught-up one (the app workload 2.7x to 3.9x). Keeping only the last
 * seq and reading its image back from the journal by seq made the statement
 * cheaper (about 1.4x) but the check dearer (170 ms: a random read of the
 * journal per key), so more in all.
 */
const TEMP_PAGE_SIZE = 65536;

/** Gives the connection's TEMP database (not yet used) pages of TEMP_PAGE_SIZE, for the rewind's table. */
export function useRewindPageSize(db: Db): void {
  db.pragma(`temp.page_size = ${TEMP_PAGE_SIZE}`);
}

/**
 * Fills CHANGED_TABLE for the events of table `tid` in (lo, hw]: one
 * statement, one pass over those events, each written as an upsert keyed by
 * the source key in which the earliest event wins the key's row at the
 * cursor (its before image, or the mark that it made the key) and the
 * latest its last image, so its cost is bounded by the events, not by the
 * table. Returns the number of keys, or undefined when the source key is
 * not among the captured columns (it always is for a captured table).
 *
 * It needs every journal row of (lo, hw] (nothing pruned past `lo`): the
 * caller checks.
 */
export function rewindToCursor(
  db: Db,
  p: CompiledProjection,
  tid: number,
  lo: number,
  hw: number,
  progress?: StepProgress,
): number | undefined {
  const n = p.source.columns.length;
  const pos = p.source.keyColumns.map((kc) => p.source.columns.findIndex((c) => c.name === kc));
  if (pos.length === 0 || pos.some((x) => x < 0)) return undefined;
  const names = p.source.columns.map((c) => quoteIdent(c.name));
  const isKey = (i: number) => pos.includes(i);
  const rest = p.source.columns.flatMap((_, i) => (isKey(i) ? [] : [i]));
  const last = rest.map(lastColumn);
  db.exec(`DROP TABLE IF EXISTS ${CHANGED_TABLE}`);
  db.exec(
    `CREATE TEMP TABLE ${CHANGED_TABLE.slice('temp.'.length)} (${p.source.columns.map((c, i) => `${names[i]} ${columnDecl(c)}`).join(', ')}, ` +
      `${CHANGED_SEQ} INTEGER NOT NULL, ${CHANGED_HELD} INTEGER NOT NULL, ` +
      `${last.map((c) => `${c}, `).join('')}${LAST_SEQ} INTEGER NOT NULL, ${LAST_HELD} INTEGER NOT NULL, ` +
      `PRIMARY KEY (${pos.map((x) => `${names[x]} COLLATE BINARY`).join(', ')})) WITHOUT ROWID`,
  );
  const ev = journalEvents(db, tid, n, lo, hw);
  const keyMoved = pos.map((x) => `${ev.before('', x)} IS NOT ${ev.after('', x)}`).join(' OR ');
  // Events that can bring a key no before image names first: inserts, and updates that change the key (a key kept by an update is its before image's).
  const newKey = `(NOT ${ev.hasBefore('')} OR ${keyMoved})`;
  // An event with a before image leaves its key a row when it is an update that keeps the key; a delete, or an update that moves it
  // away, none (LAST_HELD 0: its after image, if any, is another key's, and is not read).
  const kept = `(${ev.hasAfter('')} AND NOT (${keyMoved}))`;
  const table = quoteIdent(CHANGED_TABLE.slice('temp.'.length));
  const first = `(excluded.${CHANGED_SEQ} < ${table}.${CHANGED_SEQ} OR (excluded.${CHANGED_SEQ} = ${table}.${CHANGED_SEQ} AND excluded.${CHANGED_HELD} > ${table}.${CHANGED_HELD}))`;
  const latest = `(excluded.${LAST_SEQ} > ${table}.${LAST_SEQ} OR (excluded.${LAST_SEQ} = ${table}.${LAST_SEQ} AND excluded.${LAST_HELD} > ${table}.${LAST_HELD}))`;
  // Each column taken from the row that wins it, the key's (equal byte for byte) from neither: a key column set makes SQLite move the row.
  const take = (cond: string) => (c: string) => `${c} = CASE WHEN ${cond} THEN excluded.${c} ELSE ${table}.${c} END`;
  const tick = progress?.sample('seq');
  progress?.start('events', hw - lo, lo);
  db.prepare(
    `INSERT INTO ${CHANGED_TABLE} (${names.join(', ')}, ${CHANGED_SEQ}, ${CHANGED_HELD}, ${last.map((c) => `${c}, `).join('')}${LAST_SEQ}, ${LAST_HELD})
    SELECT ${p.source.columns.map((_, i) => ev.before('', i)).join(', ')}, seq, 1, ${rest.map((i) => `${ev.after('', i)}, `).join('')}seq, ${kept}
    FROM (${ev.sql}) WHERE ${ev.hasBefore('')}${tick === undefined ? '' : ` AND ${tick}`}
    UNION ALL
    SELECT ${p.source.columns.map((_, i) => (isKey(i) ? ev.after('', i) : 'NULL')).join(', ')}, seq, 0, ${rest.map((i) => `${ev.after('', i)}, `).join('')}seq, 1
    FROM (${ev.sql}) WHERE ${ev.hasAfter('')} AND ${newKey}
    ON CONFLICT DO UPDATE SET ${[...[...rest.map((i) => names[i] as string), CHANGED_SEQ, CHANGED_HELD].map(take(first)), ...[...last, LAST_SEQ, LAST_HELD].map(take(latest))].join(', ')}`,
  ).run(ev.params);
  progress?.end();
  return Number(db.prepare(`SELECT count(*) FROM ${CHANGED_TABLE}`).pluck().get() as bigint);
}

/*
 * A write to the source that capture did not see (a connection with
 * triggers off: the sqlite3 shell's `.dbconfig enable_trigger off`) leaves
 * a row the journal does not describe. Where it wrote a key the journal
 * changed after the cursor, the source row is not what the key's last event
 * left (its after image, or no row after a delete or a key moved away),
 * which the rewind holds: one lookup of the source by key for each changed
 * key tells. The rows are compared as capture tells a change (a storage
 * class or bytes that differ; 0.0 and -0.0 are one value to it), at the
 * source row itself, before any projection reads it: a column the
 * projection does not read, or a row its filter drops, was missed all the
 * same, by every reader of the table. What it cannot see: such a write to
 * a key no event after the cursor names (it differs from the target as a
 * hand edit of the target does, and verify cannot tell the two apart), or
 * one made before the key's first event after the cursor (its before image
 * holds it, and the target differs from it as from an edited target).
 */

/**
 * The changed keys (source key columns, in order) whose source row is not
 * what their last event after the cursor left, up to `limit` of them, and
 * how many there are; undefined when there is none. Over CHANGED_TABLE as
 * rewindToCursor filled it, in the caller's read transaction.
 */
export function uncapturedWrites(
  db: Db,
  p: CompiledProjection,
  limit: number,
): { readonly count: number; readonly keys: readonly JsonValue[][] } | undefined {
  const pos = p.source.keyColumns.map((kc) => p.source.columns.findIndex((c) => c.name === kc));
  const names = p.source.columns.map((c) => quoteIdent(c.name));
  const keys = pos.map((x) => names[x] as string);
  // Looked up by the key's own collation (its index's), then told apart byte for byte where that is not BINARY.
  const on = pos
    .map((x) => {
      const k = names[x] as string;
      const binary = (p.source.columns[x]?.collate ?? 'BINARY') === 'BINARY';
      return `s.${k} = c.${k}${binary ? '' : ` AND s.${k} = c.${k} COLLATE BINARY`}`;
    })
    .join(' AND ');
  // The changed-column test of the capture triggers, on values without affinity.
  const same = allOf(
    p.source.columns.flatMap((_, i) =>
      pos.includes(i)
        ? []
        : [
            `(+c.${lastColumn(i)} COLLATE BINARY IS +s.${names[i] as string} AND typeof(c.${lastColumn(i)}) = typeof(s.${names[i] as string}))`,
          ],
    ),
  );
  const present = `s.${keys[0] as string} IS NOT NULL`;
  const from = `${CHANGED_TABLE} AS c LEFT JOIN main.${quoteIdent(p.source.table)} AS s ON ${on}
    WHERE CASE WHEN c.${LAST_HELD} = 1 THEN NOT (${present} AND ${same}) ELSE ${present} END`;
  const found = db
    .prepare(`SELECT ${keys.map((k) => `c.${k}`).join(', ')} FROM ${from} LIMIT ${limit}`)
    .raw()
    .all() as unknown[][];
  if (found.length === 0) return undefined;
  const count =
    found.length < limit ? found.length : Number(db.prepare(`SELECT count(*) FROM ${from}`).pluck().safeIntegers(false).get() as number);
  return { count, keys: found.map((r) => r.map((v) => toJsonValue(fromDriver((v ?? null) as SqlValue)))) };
}

/**
 * Why the keys `rec` changed after its cursor cannot be rewound to it, if
 * they cannot: an event of its table after the cursor carries no
 * before-image to read (keys or counter mode), or was recorded by an earlier
 * arming of the table (another mode, or writes it missed). Then nothing is
 * compared, with the reason the next sync acts on, never a difference read
 * from what is not an image.
 */
export function unrewindable(db: Db, rec: ProjectionRecord, tid: number): { reason: string; skipped: string } | undefined {
  const u = imagesUnreadableAfter(db, tid, rec.seq);
  if (u === undefined) return undefined;
  const at = `${rec.name}'s cursor (seq ${rec.seq})`;
  if (u.reason === 'NEEDS_IMAGES_MODE')
    return {
      reason: u.reason,
      skipped: `not compared: ${rec.sourceTable} is captured in ${u.mode} mode (since seq ${u.since}), and its events after ${at} hold no before-images to tell its rows at the cursor from; the next sluice sync suspends ${rec.name} until the table is captured in images mode again`,
    };
  return {
    reason: u.reason,
    skipped: `not compared: ${rec.sourceTable} was re-armed at seq ${u.seq}, after ${at}, and its events before that were recorded by the earlier capture (in another mode, or around writes it missed), so they cannot be read as its rows at the cursor; the next sluice sync rebuilds ${rec.name}, then verify again`,
  };
}

/**
 * SQL true when the target key whose columns are `keys` (SQL, in the
 * order of `p.key`) is among the changed keys: a lookup by CHANGED_TABLE's
 * primary key. The key columns there have the source columns' affinity, as
 * the values compared have, and BINARY collation, so SQLite can use its
 * index (with a column of another affinity it cannot, and scans the whole
 * table for every row).
 */
export function isChangedKey(p: CompiledProjection, keys: readonly string[]): string {
  const cols = changedKeyColumns(p);
  return `EXISTS (SELECT 1 FROM ${CHANGED_TABLE} AS c WHERE ${cols.map((c, i) => `c.${c} IS ${keys[i] as string} COLLATE BINARY`).join(' AND ')})`;
}

/** CHANGED_TABLE's columns that hold each column of the target key (`p.key` order): the source columns it copies. */
export function changedKeyColumns(p: CompiledProjection): string[] {
  return p.key.map((kc) => quoteIdent(p.columns.find((c) => c.name === kc)?.from ?? kc));
}

/**
 * When a rewind costs more than comparing the table itself (onNote): at
 * least COSTLY_REWIND_EVENTS events of the table after the cursor, and more
 * than its rows / REWIND_EVENT_COST. Rewinding takes each event into a TEMP
 * B-tree keyed by the source key, in the events' order (random over the
 * keys), and looks each changed key up in the source and target; comparing
 * takes the rows in key order. bench/verify-behind.ts measured an event at
 * 3 to 5 rows' worth (1M rows, 500k events).
 */
const COSTLY_REWIND_EVENTS = 10_000;
const REWIND_EVENT_COST = 4;

/**
 * Said when rewinding `rec` to its cursor costs more than comparing its
 * table (COSTLY_REWIND_EVENTS); after a sync there is nothing to rewind.
 */
export function costlyRewind(
  db: Db,
  rec: ProjectionRecord,
  tid: number,
  hw: number,
  paths: { readonly source: string; readonly target: string } | undefined,
): string | undefined {
  if (hw - rec.seq < COSTLY_REWIND_EVENTS) return undefined;
  const rows = Number(
    db
      .prepare(`SELECT count(*) FROM main.${quoteIdent(rec.sourceTable)}`)
      .pluck()
      .get() as bigint,
  );
  if ((hw - rec.seq) * REWIND_EVENT_COST <= rows) return undefined;
  // The seqs after the cursor are every table's events: count this one's (a read of the range, a fraction of the rewind's).
  const events = eventsAfter(db, tid, rec.seq);
  if (events < COSTLY_REWIND_EVENTS || events * REWIND_EVENT_COST <= rows) return undefined;
  const sync = paths === undefined ? 'a sync of the target' : `\`${shellCommand('sync', { source: paths.source, target: paths.target })}\``;
  return `${rec.name} is ${events} events behind its source (its cursor is seq ${rec.seq}, the source is at seq ${hw}), against ${rows} rows of ${rec.sourceTable}: verify takes each of those events to compare the keys they changed as they were at the cursor, which costs more than comparing the table itself; ${sync} first makes verify cost about what comparing the table does`;
}
