import type { Db, TableInfo } from '../sqlite/index.ts';
import { CaptureRefusedError, InvalidInputError } from '../errors.ts';
import { foldIdent, connectionState, shellWord, slot } from '../sqlite/index.ts';
import { enableCommand } from './enable-hint.ts';
import type { CapturedTable } from './catalog.ts';
import {
  armedTriggers,
  generatedFromExcluded,
  goneExclusionDetail,
  heldExcluded,
  includableColumns,
  keptExclusion,
  newSinceArmed,
  resolveExclusion,
} from './excluded.ts';
import {
  JOURNAL_TABLE,
  MASK_COLUMN,
  PENDING_TABLE,
  STATE_TABLE,
  TABLES_TABLE,
  TABLES_EXCLUDED_COLUMN_DEF,
  journalColumn,
} from './schema.ts';
import { MAX_INTEGER_MASK_COLUMNS } from './mask.ts';

/*
 * Changing which columns of a captured table are left out (enable's
 * `exclude`): a re-arm (EXCLUDE_CHANGED). The retained journal rows and
 * pending notes of the table lose every newly excluded column in the same
 * transaction, with secure_delete on so that the bytes they leave are
 * zeroed in the pages written; after the commit a checkpoint (best effort)
 * copies those pages over the file's older ones and empties the WAL.
 */

/**
 * The excluded set enable arms a named table with: as asked, or (not asked)
 * the one it has. `include` names columns to capture that are new since
 * the table was armed: while the table leaves out a column it had then, a
 * new column may be that column renamed (a rename cannot be told from a drop
 * and an add), so each new column must be named, in `requested` (left out)
 * or in `include` (captured); one named in neither is refused, naming both
 * commands.
 */
export function exclusionFor(
  db: Db,
  info: TableInfo,
  prior: CapturedTable | undefined,
  requested: readonly string[] | undefined,
  include: readonly string[] = [],
): string[] {
  const captured = resolveInclusion(info, include, requested);
  if (requested !== undefined) {
    const exclude = resolveExclusion(info, requested, prior?.excluded ?? []);
    if (prior !== undefined) refuseUnnamed(db, info, prior, exclude, captured);
    return exclude;
  }
  if (prior === undefined) return [];
  const triggers = armedTriggers(db, prior);
  const kept = keptExclusion(prior, info, triggers);
  if (kept !== undefined) return [...kept];
  // Held only for its new columns, each one named to capture: the set as it is.
  const live = new Set(info.columns.map((c) => foldIdent(c.name)));
  const generated = generatedFromExcluded(
    info,
    prior.excluded.filter((c) => live.has(foldIdent(c))),
  );
  const fresh = includableColumns(prior, info, triggers);
  if (fresh !== undefined && captured.length > 0) {
    const named = new Set(captured.map(foldIdent));
    const withFresh = keptExclusion({ ...prior, columns: [...prior.columns, ...fresh] }, info, triggers);
    if (fresh.every((c) => named.has(foldIdent(c))) && withFresh !== undefined) return [...withFresh];
  }
  const code = generated.length > 0 ? 'GENERATED_FROM_EXCLUDED' : 'SCHEMA_CHANGED';
  throw new CaptureRefusedError(code, prior.name, `Table ${prior.name}: ${goneExclusionDetail(prior, info, db.name, triggers)}.`);
}

/** The columns `include` names, as `info` spells them: each one the table has and `requested` does not leave out. */
function resolveInclusion(info: TableInfo, include: readonly string[], requested: readonly string[] | undefined): string[] {
  const out: string[] = [];
  for (const name of include) {
    const col = info.columns.find((c) => c.name === name) ?? info.columns.find((c) => foldIdent(c.name) === foldIdent(name));
    if (col === undefined)
      throw new InvalidInputError(
        'UNKNOWN_COLUMN',
        `Table ${info.name} has no column ${name} to capture (it has ${info.columns.map((c) => c.name).join(', ')}). Fix the name in --include.`,
      );
    if (requested?.some((r) => foldIdent(r) === foldIdent(col.name)) === true)
      throw new InvalidInputError(
        'BAD_INCLUDE',
        `Column ${col.name} of ${info.name} is named both in --exclude (left out of capture) and in --include (captured). Name it in one of them.`,
      );
    out.push(col.name);
  }
  return out;
}

/**
 * Refuses an exclude set told for `prior`'s table, which left out a column it
 * had when armed, that names neither way (left out, or captured by
 * `include`) a column new since: it may be the column left out, renamed.
 */
function refuseUnnamed(db: Db, info: TableInfo, prior: CapturedTable, exclude: readonly string[], include: readonly string[]): void {
  if (!heldExcluded(prior)) return;
  const named = new Set([...exclude, ...include].map(foldIdent));
  const unnamed = newSinceArmed(prior, info).filter((c) => !named.has(foldIdent(c)));
  if (unnamed.length === 0) return;
  const one = unnamed.length === 1;
  const list = unnamed.join(', ');
  const cmd = enableCommand(db.name, [prior.name]);
  const leave = shellWord([...exclude, ...unnamed].join(','));
  const keep = exclude.length === 0 ? "''" : shellWord(exclude.join(','));
  throw new CaptureRefusedError(
    'SCHEMA_CHANGED',
    prior.name,
    `Table ${prior.name}: column${one ? '' : 's'} ${list} of ${prior.name} ${one ? 'is' : 'are'} new since it was armed, while it left ${prior.excluded.join(', ')} out of capture: ${one ? 'it' : 'they'} may hold the values left out (a rename cannot be told from a drop and an add), and --exclude does not name ${one ? 'it' : 'them'}. Say which: to leave ${one ? 'it' : 'them'} out, run ${cmd} --exclude ${leave}; to capture ${one ? 'it' : 'them'}, run ${cmd} --exclude ${keep} --include ${shellWord(unnamed.join(','))}. Nothing was changed.`,
  );
}

/** `exclude a, b -> c` when `exclude` differs from the names `prior` leaves out (those its table no longer has too); undefined when the same. */
export function exclusionChange(prior: CapturedTable, exclude: readonly string[]): string | undefined {
  const before = prior.excluded;
  const key = (l: readonly string[]) => JSON.stringify(l.map(foldIdent).sort());
  if (key(before) === key(exclude)) return undefined;
  const list = (l: readonly string[]) => (l.length === 0 ? 'none' : l.join(', '));
  return `exclude ${list(before)} -> ${list(exclude)}`;
}

/** The secure_delete setting each connection had before a purge turned it on (restored by afterPurge). */
const secureBefore = slot('secure-delete-before', (): { value?: number } => ({}));

/**
 * Sets to NULL, in the retained journal rows of `prior` and its pending
 * notes, the cells of the columns `exclude` newly leaves out (ones it
 * captured). Rows journaled since the table was last armed hold its
 * columns in `prior.columns` order; older ones (before a re-arm or an
 * alter) are in a layout no reader reads again after this re-arm, so they
 * lose every image cell. Returns the rows changed.
 */
export function purgeExcluded(db: Db, prior: CapturedTable, exclude: readonly string[]): number {
  const was = new Set(prior.excluded.map(foldIdent));
  const newly = exclude.filter((c) => !was.has(foldIdent(c)));
  const positions = newly.map((c) => prior.columns.findIndex((x) => foldIdent(x) === foldIdent(c))).filter((i) => i >= 0);
  if (positions.length === 0 || prior.mode !== 'images') return 0;
  const state = connectionState(db).get(secureBefore);
  state.value ??= Number(db.pragma('secure_delete', { simple: true }));
  db.pragma('secure_delete = ON');
  const n = prior.columns.length;
  const recent = positions.flatMap((i) => [journalColumn(i), journalColumn(n + i)]).map((c) => `${c} = NULL`);
  const width = Number(db.prepare(`SELECT journal_width FROM main.${STATE_TABLE} WHERE id = 1`).pluck().get());
  const all = Array.from({ length: width }, (_, i) => `${journalColumn(i)} = NULL`);
  let rows = 0;
  rows += db
    .prepare(`UPDATE main.${JOURNAL_TABLE} SET ${recent.join(', ')} WHERE tid = ? AND seq > ?`)
    .run(prior.tid, prior.armedSeq).changes;
  if (all.length > 0)
    rows += db
      .prepare(`UPDATE main.${JOURNAL_TABLE} SET ${all.join(', ')} WHERE tid = ? AND seq <= ?`)
      .run(prior.tid, prior.armedSeq).changes;
  clearMaskBits(db, prior, positions);
  // Notes are scratch (empty between statements): whatever is there goes, zeroed.
  db.prepare(`DELETE FROM main.${PENDING_TABLE} WHERE tid = ?`).run(prior.tid);
  return rows;
}

/**
 * The changed-column masks of the retained rows say nothing more of the
 * newly excluded columns (at `positions` of `prior.columns`): their bits are
 * cleared in rows journaled since the table was last armed, and older rows,
 * in a layout no reader reads again, lose their mask (NULL, not known).
 * Otherwise a row would still say that a secret changed, and when.
 */
function clearMaskBits(db: Db, prior: CapturedTable, positions: readonly number[]): void {
  const journalCols = db.prepare(`SELECT name FROM main.pragma_table_info(?)`).pluck().all(JOURNAL_TABLE) as string[];
  if (!journalCols.includes(MASK_COLUMN)) return;
  db.prepare(`UPDATE main.${JOURNAL_TABLE} SET ${MASK_COLUMN} = NULL WHERE tid = ? AND seq <= ? AND ${MASK_COLUMN} IS NOT NULL`).run(
    prior.tid,
    prior.armedSeq,
  );
  if (prior.columns.length <= MAX_INTEGER_MASK_COLUMNS) {
    const bits = positions.reduce((m, i) => m | (1n << BigInt(i)), 0n);
    db.prepare(
      `UPDATE main.${JOURNAL_TABLE} SET ${MASK_COLUMN} = ${MASK_COLUMN} & ~${bits} WHERE tid = ? AND seq > ? AND typeof(${MASK_COLUMN}) = 'integer' AND (${MASK_COLUMN} & ${bits}) <> 0`,
    ).run(prior.tid, prior.armedSeq);
    return;
  }
  const rows = db
    .prepare(`SELECT seq, ${MASK_COLUMN} AS m FROM main.${JOURNAL_TABLE} WHERE tid = ? AND seq > ? AND typeof(${MASK_COLUMN}) = 'blob'`)
    .all(prior.tid, prior.armedSeq) as { seq: number | bigint; m: Uint8Array }[];
  const write = db.prepare(`UPDATE main.${JOURNAL_TABLE} SET ${MASK_COLUMN} = ? WHERE seq = ?`);
  for (const { seq, m } of rows) {
    const cleared = Uint8Array.from(m);
    for (const i of positions) if (i >> 3 < cleared.length) cleared[i >> 3] = (cleared[i >> 3] as number) & ~(1 << (i & 7));
    if (cleared.some((b, j) => b !== m[j])) write.run(cleared, seq);
  }
}

/** After enable's transaction (committed or not): secure_delete as the connection had it before a purge. */
export function afterPurge(db: Db): void {
  const state = connectionState(db).peek(secureBefore);
  if (state?.value === undefined) return;
  db.pragma(`secure_delete = ${state.value}`);
  delete state.value;
}

/** After a purge committed: a checkpoint (best effort), so that no WAL frame keeps the purged pages' old images and the file's pages are the purged ones. */
export function checkpointPurged(db: Db): void {
  try {
    if (String(db.pragma('journal_mode', { simple: true })) === 'wal') db.pragma('wal_checkpoint(TRUNCATE)');
  } catch {
    // A reader holding an old snapshot keeps the frames: the next checkpoint copies them over.
  }
}

/**
 * Stores the excluded set of table `tid` (armed as `info`), adding the `excluded` column in place when it is
 * first needed. A name `info` does not have is stored as `{"absent": name}`: it stays left out, and a later
 * re-arm knows it was already gone (keptExclusion).
 */
export function recordExclusion(db: Db, tid: number, excluded: readonly string[], info: TableInfo): void {
  const has = (db.prepare(`SELECT name FROM main.pragma_table_info(?)`).pluck().all(TABLES_TABLE) as string[]).includes('excluded');
  if (!has) {
    if (excluded.length === 0) return;
    db.exec(`ALTER TABLE main.${TABLES_TABLE} ADD COLUMN ${TABLES_EXCLUDED_COLUMN_DEF}`);
  }
  const live = new Set(info.columns.map((c) => foldIdent(c.name)));
  db.prepare(`UPDATE main.${TABLES_TABLE} SET excluded = ? WHERE tid = ?`).run(
    excluded.length === 0 ? null : JSON.stringify(excluded.map((c) => (live.has(foldIdent(c)) ? c : { absent: c }))),
    tid,
  );
}
