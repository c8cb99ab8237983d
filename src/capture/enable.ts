import { randomUUID } from 'node:crypto';
import type { Db, TableInfo } from '../sqlite/index.ts';
import { foldIdent, useWal, withWriteTransaction, quoteIdent, schemaVersion } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { hasCapture, readOwnDdl, readState, readTables, type CapturedTable } from './catalog.ts';
import { capturedColumns, newSinceArmed } from './excluded.ts';
import { checkEnable, sluiceObjects } from './gates.ts';
import { rearmableAs } from './rearmable.ts';
import { afterPurge, checkpointPurged, exclusionChange, exclusionFor, purgeExcluded } from './exclusion-change.ts';
import {
  CAPTURE_MODES,
  DEFAULT_RETENTION,
  FORMAT_VERSION,
  MARK_VIEW,
  MARK_VIEW_SQL,
  MIN_RETENTION,
  SCHEMA_TABLE,
  STATE_TABLE,
  TABLES_TABLE,
  UPGRADABLE_FORMATS,
  metadataDdl,
  LAST_CHECKPOINT_TID,
  LAST_TABLE,
  type CaptureMode,
} from './schema.ts';
import { forgetArming, verifyCapture, type CaptureVerification, type UnarmedReason } from './arming.ts';
import { upgradeFormat1, upgradeInPlace } from './upgrade.ts';
import { arm } from './arm.ts';
import { pruneJournal } from './prune.ts';
import { remakePending } from './damaged.ts';
import type { Reason } from '../reasons.ts';

export interface EnableOptions {
  /** Capture mode for the named tables. Default `images`. */
  readonly mode?: CaptureMode;
  /** Retained seq span (default 1,000,000, minimum 1,024). Changing it prunes at once. */
  readonly retention?: number;
  /** Leave the journal mode as it is (re-arming on `sync`). Default false: enable switches the file to WAL. */
  readonly keepJournalMode?: boolean;
  /**
   * Columns of the named tables to leave out of capture: never journaled, so
   * in no event, snapshot or target. Absent: a table keeps the set it has
   * (none when new); `[]` captures every column again. Changing the set
   * re-arms the table (EXCLUDE_CHANGED) and purges its retained journal rows
   * of the newly excluded columns. Key columns cannot be left out.
   */
  readonly exclude?: readonly string[];
  /**
   * Columns of the named tables new since they were armed to capture. While
   * a table leaves out a column it had when armed, a new column may be that
   * one renamed: enable refuses the table until each new column is named,
   * in `exclude` (left out) or here (captured). docs/journal.md, "Columns left out".
   */
  readonly include?: readonly string[];
}

/** One re-armed table and why it was not armed (MODE_CHANGED: enable was asked for another mode). */
export interface RearmedTable {
  readonly table: string;
  readonly reason: UnarmedReason | Reason<'MODE_CHANGED' | 'EXCLUDE_CHANGED'>;
  readonly detail?: string;
}

export interface EnableResult {
  readonly sourceId: string;
  readonly generation: number;
  /** True when capture was created from nothing (new sourceId). */
  readonly created: boolean;
  /** Tables newly captured by this call. */
  readonly added: readonly string[];
  /** Tables whose triggers were re-installed (missing, altered, or mode changed). */
  readonly rearmed: readonly string[];
  /** The tables of `rearmed`, each with why it was re-armed. */
  readonly rearmedReasons: readonly RearmedTable[];
  /** The file's journal mode after enable: 'wal' unless another connection kept it from switching. */
  readonly journalMode: string;
  /** True when this call switched the file to WAL (after its transaction committed). */
  readonly switchedToWal: boolean;
  /** Retained journal rows purged of columns newly left out of capture (absent when none were). */
  readonly purgedRows?: number;
  /** sluice's tables made again, empty, after they were dropped outside sluice (`_sluice_pending`; absent when none were). */
  readonly remade?: readonly string[];
}

function validateRetention(retention: number | undefined): void {
  if (retention === undefined) return;
  if (!Number.isSafeInteger(retention) || retention < MIN_RETENTION) {
    throw new InvalidInputError(
      'BAD_RETENTION',
      `Retention ${retention} is not allowed: it must be a whole number of seqs >= ${MIN_RETENTION}. Example: --retention 1000000.`,
    );
  }
}

/**
 * Enables capture on `tables`, or re-arms what is missing or altered. Idempotent:
 * a call with nothing to do changes nothing. All in one BEGIN IMMEDIATE
 * transaction, after every gate has passed. Then, once it has committed,
 * switches the file to WAL (unless keepJournalMode): a failed enable
 * changes nothing, journal mode included.
 *
 * @example
 * const db = openDatabase('app.db');
 * enable(db, ['issues', 'comments'], { mode: 'images' });
 */
export function enable(db: Db, tables: readonly string[], options: EnableOptions = {}): EnableResult {
  const mode = options.mode ?? 'images';
  if (!CAPTURE_MODES.includes(mode)) {
    throw new InvalidInputError('BAD_MODE', `Capture mode ${String(mode)} is unknown. Use one of: ${CAPTURE_MODES.join(', ')}.`);
  }
  validateRetention(options.retention);
  let result: Omit<EnableResult, 'journalMode' | 'switchedToWal'>;
  try {
    result = enableInTransaction(db, tables, mode, options);
  } finally {
    afterPurge(db);
  }
  forgetArming(db);
  if (result.purgedRows !== undefined) checkpointPurged(db);
  const wal =
    options.keepJournalMode === true ? { journalMode: String(db.pragma('journal_mode', { simple: true })), switched: false } : useWal(db);
  return { ...result, journalMode: wal.journalMode, switchedToWal: wal.switched };
}

function enableInTransaction(
  db: Db,
  tables: readonly string[],
  mode: CaptureMode,
  options: EnableOptions,
): Omit<EnableResult, 'journalMode' | 'switchedToWal'> {
  return withWriteTransaction(db, () => {
    const schemaBefore = schemaVersion(db);
    const infos = checkEnable(db, tables);
    const existing = readState(db);
    const upgrading = existing !== undefined && UPGRADABLE_FORMATS.includes(existing.format);
    const created = existing === undefined || (existing.format !== FORMAT_VERSION && !upgrading);

    if (created) createFromNothing(db, options.retention ?? existing?.retention ?? DEFAULT_RETENTION);
    // Before the upgrades, which clear it: the pending table dropped outside sluice is made again (nothing was lost).
    const remade = created ? [] : remakePending(db);
    let verification: CaptureVerification;
    if (upgrading && existing.format !== 1) {
      // The tables format 2, 3 or 4 armed are upgraded in place; the others are re-armed below, with what was wrong with them.
      upgradeInPlace(db);
      // Their triggers are newer than the order mark now: it moves after them, as after any arming.
      placeMark(db);
      verification = verifyCapture(db);
    } else {
      // Read before the upgrade: it is what a format-1 capture's tables are (CAPTURE_OUTDATED), and what the re-arm reports.
      verification = verifyCapture(db);
      if (upgrading) upgradeFormat1(db);
    }
    // Format 1 -> current re-arms every table with triggers of another shape: every reader rebuilds.
    const bumping = upgrading && existing.format === 1;
    if (!created && options.retention !== undefined && options.retention !== existing.retention) {
      db.prepare(`UPDATE ${STATE_TABLE} SET retention = ?, updated_ms = ? WHERE id = 1`).run(options.retention, Date.now());
      pruneJournal(db);
    }

    const added: string[] = [];
    const rearmed: string[] = [];
    const rearmedReasons: RearmedTable[] = [];
    const current = new Map(readTables(db).map((t) => [t.name, t]));
    // Re-arm every captured table that lost or changed its triggers (and whose table is still capturable).
    for (const a of verification.tables) {
      if (a.armed || infos.has(a.table.name)) continue;
      // Dropped, no longer capturable, or an excluded column maybe renamed (enable must be told the set): it stays unarmed and readers rebuild.
      const as = rearmableAs(db, a);
      if (as === undefined) continue;
      const { info, kept } = as;
      arm(db, a.table.tid, info, a.table.mode, a.table, kept);
      rearmed.push(info.name);
      rearmedReasons.push({
        table: info.name,
        reason: a.reason ?? 'TRIGGER_ALTERED',
        ...(a.detail === undefined ? {} : { detail: a.detail }),
      });
    }
    let purgedRows: number | undefined;
    for (const [name, info] of infos) {
      const prior = current.get(name);
      const exclude = exclusionFor(db, info, prior, options.exclude, options.include);
      if (prior === undefined) {
        arm(db, undefined, info, mode, undefined, exclude);
        added.push(name);
        continue;
      }
      const arming = verification.tables.find((t) => t.table.tid === prior.tid);
      const excludeChange = exclusionChange(prior, exclude);
      if (prior.mode !== mode || arming?.armed !== true || excludeChange !== undefined) {
        // In this transaction, before the re-arm: no retained row keeps a column now left out.
        const purged = excludeChange === undefined ? 0 : purgeExcluded(db, prior, exclude);
        if (purged > 0) purgedRows = (purgedRows ?? 0) + purged;
        arm(db, prior.tid, info, mode, prior, exclude);
        rearmed.push(name);
        rearmedReasons.push(
          arming?.armed === false
            ? {
                table: name,
                reason: arming.reason ?? 'TRIGGER_ALTERED',
                ...(arming.exclude !== undefined
                  ? { detail: toldDetail(prior, info, exclude) }
                  : arming.detail === undefined
                    ? {}
                    : { detail: arming.detail }),
              }
            : excludeChange !== undefined
              ? { table: name, reason: 'EXCLUDE_CHANGED', detail: excludeChange }
              : { table: name, reason: 'MODE_CHANGED', detail: `mode ${prior.mode} -> ${mode}` },
        );
      }
    }
    if (rearmed.length > 0 && !created) {
      // A re-arm advances the generation, but only the re-armed tables'
      // readers rebuild (their armed_generation moves); an upgrade from
      // format 1 changes every table's triggers, so every reader rebuilds.
      const reason = bumping ? `upgraded capture from format ${existing.format} to ${FORMAT_VERSION}` : `re-armed ${rearmed.join(', ')}`;
      db.prepare(`UPDATE ${STATE_TABLE} SET generation = generation + 1, updated_ms = ?, last_reason = ? WHERE id = 1`).run(
        Date.now(),
        reason,
      );
      const gen = (readState(db) as { generation: number }).generation;
      if (bumping) db.prepare(`UPDATE ${STATE_TABLE} SET bumped_generation = generation WHERE id = 1`).run();
      db.prepare(`UPDATE ${TABLES_TABLE} SET armed_generation = ? WHERE name IN (SELECT value FROM json_each(?))`).run(
        gen,
        JSON.stringify(rearmed),
      );
    }
    if (added.length > 0 || rearmed.length > 0 || created || upgrading) placeMark(db);
    recordOwnDdl(db, schemaBefore);
    const state = readState(db);
    if (state === undefined) throw new Error('unreachable: capture state missing after enable');
    return {
      sourceId: state.sourceId,
      generation: state.generation,
      created,
      added,
      rearmed,
      rearmedReasons,
      ...(purgedRows === undefined ? {} : { purgedRows }),
      ...(remade.length === 0 ? {} : { remade }),
    };
  });
}

/**
 * The detail of a table re-armed with the columns enable was told to leave
 * out, after a column left out may have moved (the arming's `exclude`):
 * what it captures now and what it leaves out, new columns named.
 */
function toldDetail(prior: CapturedTable, info: TableInfo, exclude: readonly string[]): string {
  const fresh = newSinceArmed(prior, info);
  const captured = capturedColumns(info, exclude).map((c) => c.name);
  const isNew = (c: string) => fresh.some((f) => foldIdent(f) === foldIdent(c));
  const mark = (l: readonly string[]) => (l.length === 0 ? 'none' : l.map((c) => (isNew(c) ? `${c} (new since armed)` : c)).join(', '));
  return `the schema of ${info.name} changed since it was armed (a column left out may have moved); armed as told: captures ${mark(captured)}; leaves out ${mark(exclude)}`;
}

function createFromNothing(db: Db, retention: number): void {
  // A surviving partial capture (our objects without a valid state row) is replaced.
  dropOwnObjects(db);
  for (const sql of metadataDdl(0)) db.exec(sql);
  db.prepare(`INSERT INTO ${LAST_TABLE} (tid, seq) VALUES (${LAST_CHECKPOINT_TID}, 0)`).run();
  const now = Date.now();
  db.prepare(
    `INSERT INTO ${STATE_TABLE} (id, format, source_id, generation, bumped_generation, retention, pruned_through, journal_width, created_ms, updated_ms) VALUES (1, ?, ?, 1, 1, ?, 0, 0, ?, ?)`,
  ).run(FORMAT_VERSION, randomUUID(), retention, now, now);
}

/**
 * Records the schema_version this transaction started from and leaves, when
 * it did DDL: readers tell sluice's own DDL from anyone else's by it (see
 * SCHEMA_TABLE).
 */
export function recordOwnDdl(db: Db, before: number): void {
  db.exec(
    metadataDdl(0)
      .find((sql) => sql.startsWith(`CREATE TABLE ${SCHEMA_TABLE} `))
      ?.replace('CREATE TABLE', 'CREATE TABLE IF NOT EXISTS') as string,
  );
  const after = schemaVersion(db);
  if (after === before) return;
  // Sluice's DDL transactions back to back (sync upgrading the consumers
  // table, then the capture format): no other DDL can have run between
  // them, so the spans join into one, and a cursor from before the first
  // still sees only sluice's own DDL since.
  const own = readOwnDdl(db);
  const from = own !== undefined && own.after === before && own.before < before ? own.before : before;
  db.prepare(
    `INSERT INTO ${SCHEMA_TABLE} (id, before, after) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET before = excluded.before, after = excluded.after`,
  ).run(from, after);
}

/** Makes the order mark the newest of sluice's objects again (see MARK_VIEW). */
export function placeMark(db: Db): void {
  db.exec(`DROP VIEW IF EXISTS main.${quoteIdent(MARK_VIEW)}`);
  db.exec(MARK_VIEW_SQL);
}

/** Drops every object sluice made in main (triggers first). */
export function dropOwnObjects(db: Db): string[] {
  const objects = sluiceObjects(db).filter((o) => o.ours);
  const kinds = ['trigger', 'view', 'table'];
  const ordered = kinds.flatMap((k) => objects.filter((o) => o.type === k));
  for (const o of ordered) db.exec(`DROP ${o.type.toUpperCase()} IF EXISTS main.${quoteIdent(o.name)}`);
  forgetArming(db);
  return ordered.map((o) => o.name);
}

export { hasCapture };
