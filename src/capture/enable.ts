import { randomUUID } from 'node:crypto';
import type { Db } from '../sqlite/index.ts';
import { useWal, withWriteTransaction, quoteIdent, schemaVersion, type TableInfo } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { captureFingerprint } from './table-fingerprint.ts';
import { hasCapture, readState, readTables, highWaterMark, type CapturedTable } from './catalog.ts';
import { checkForeignKeys, checkNamespace, checkTable, sluiceObjects } from './gates.ts';
import { buildTriggers, journalWidthFor } from './triggers.ts';
import { guardInputs } from './guard-inputs.ts';
import {
  CAPTURE_MODES,
  DEFAULT_RETENTION,
  FORMAT_VERSION,
  JOURNAL_TABLE,
  LAST_TABLE,
  MARK_VIEW,
  MARK_VIEW_SQL,
  MIN_RETENTION,
  PENDING_TABLE,
  PRUNE_TRIGGER,
  SCHEMA_TABLE,
  STATE_TABLE,
  TABLES_TABLE,
  UPGRADABLE_FORMATS,
  BUMPED_COLUMN_DEF,
  journalColumn,
  legacyStateDdl,
  metadataDdl,
  triggerNames,
  type CaptureMode,
} from './schema.ts';
import { forgetArming, verifyCapture, type UnarmedReason } from './arming.ts';
import { pruneJournal } from './prune.ts';
import type { Reason } from '../reasons.ts';

export interface EnableOptions {
  /** Capture mode for the named tables. Default `images`. */
  readonly mode?: CaptureMode;
  /** Retained seq span (default 1,000,000, minimum 1,024). Changing it prunes at once. */
  readonly retention?: number;
  /** Leave the journal mode as it is (re-arming on `sync`). Default false: enable switches the file to WAL. */
  readonly keepJournalMode?: boolean;
}

/** One re-armed table and why it was not armed (MODE_CHANGED: enable was asked for another mode). */
export interface RearmedTable {
  readonly table: string;
  readonly reason: UnarmedReason | Reason<'MODE_CHANGED'>;
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
  const result = withWriteTransaction(db, () => {
    const schemaBefore = schemaVersion(db);
    checkNamespace(db);
    const infos = new Map<string, TableInfo>();
    for (const name of tables) {
      const info = checkTable(db, name);
      infos.set(info.name, info);
    }
    const existing = readState(db);
    const upgrading = existing !== undefined && UPGRADABLE_FORMATS.includes(existing.format);
    const created = existing === undefined || (existing.format !== FORMAT_VERSION && !upgrading);
    checkForeignKeys(db, [...infos.keys()]);

    if (created) createFromNothing(db, options.retention ?? existing?.retention ?? DEFAULT_RETENTION);
    // Read before the upgrade: it is what a format-1 capture's tables are (CAPTURE_OUTDATED), and what the re-arm reports.
    const verification = verifyCapture(db);
    if (upgrading) upgradeFormat(db);
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
      let info: TableInfo;
      try {
        info = checkTable(db, a.table.name);
        checkForeignKeys(db, [info.name]);
      } catch {
        continue; // dropped, or no longer capturable: it stays unarmed and readers rebuild
      }
      arm(db, a.table.tid, info, a.table.mode, a.table);
      rearmed.push(info.name);
      rearmedReasons.push({
        table: info.name,
        reason: a.reason ?? 'TRIGGER_ALTERED',
        ...(a.detail === undefined ? {} : { detail: a.detail }),
      });
    }
    for (const [name, info] of infos) {
      const prior = current.get(name);
      if (prior === undefined) {
        arm(db, undefined, info, mode, undefined);
        added.push(name);
        continue;
      }
      const arming = verification.tables.find((t) => t.table.tid === prior.tid);
      if (prior.mode !== mode || arming?.armed !== true) {
        arm(db, prior.tid, info, mode, prior);
        rearmed.push(name);
        rearmedReasons.push(
          arming?.armed === false
            ? { table: name, reason: arming.reason ?? 'TRIGGER_ALTERED', ...(arming.detail === undefined ? {} : { detail: arming.detail }) }
            : { table: name, reason: 'MODE_CHANGED', detail: `mode ${prior.mode} -> ${mode}` },
        );
      }
    }
    if (rearmed.length > 0 && !created) {
      // A re-arm advances the generation, but only the re-armed tables'
      // readers rebuild (their armed_generation moves); an upgrade of the
      // format changes every table's triggers, so every reader rebuilds.
      const reason = upgrading ? `upgraded capture from format ${existing.format} to ${FORMAT_VERSION}` : `re-armed ${rearmed.join(', ')}`;
      db.prepare(`UPDATE ${STATE_TABLE} SET generation = generation + 1, updated_ms = ?, last_reason = ? WHERE id = 1`).run(
        Date.now(),
        reason,
      );
      const gen = (readState(db) as { generation: number }).generation;
      if (upgrading) db.prepare(`UPDATE ${STATE_TABLE} SET bumped_generation = generation WHERE id = 1`).run();
      db.prepare(`UPDATE ${TABLES_TABLE} SET armed_generation = ? WHERE name IN (SELECT value FROM json_each(?))`).run(
        gen,
        JSON.stringify(rearmed),
      );
    }
    if (added.length > 0 || rearmed.length > 0 || created || upgrading) placeMark(db);
    recordOwnDdl(db, schemaBefore);
    const state = readState(db);
    if (state === undefined) throw new Error('unreachable: capture state missing after enable');
    return { sourceId: state.sourceId, generation: state.generation, created, added, rearmed, rearmedReasons };
  });
  forgetArming(db);
  const wal =
    options.keepJournalMode === true ? { journalMode: String(db.pragma('journal_mode', { simple: true })), switched: false } : useWal(db);
  return { ...result, journalMode: wal.journalMode, switchedToWal: wal.switched };
}

function createFromNothing(db: Db, retention: number): void {
  // A surviving partial capture (our objects without a valid state row) is replaced.
  dropOwnObjects(db);
  for (const sql of metadataDdl(0)) db.exec(sql);
  const now = Date.now();
  db.prepare(
    `INSERT INTO ${STATE_TABLE} (id, format, source_id, generation, bumped_generation, retention, pruned_through, journal_width, created_ms, updated_ms) VALUES (1, ?, ?, 1, 1, ?, 0, 0, ?, ?)`,
  ).run(FORMAT_VERSION, randomUUID(), retention, now, now);
}

/*
 * Format 1 -> 2, in the enable transaction: the state gains
 * bumped_generation (with the text a fresh table has), the pending scratch
 * table (empty between statements) is made again with its hw column, and
 * every table's triggers no longer match what this build makes, so the
 * re-arm loop re-installs them and the generation moves.
 */
function upgradeFormat(db: Db): void {
  const stateSql = db.prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?").pluck().get(STATE_TABLE);
  if (stateSql === legacyStateDdl()) {
    db.exec(`ALTER TABLE ${STATE_TABLE} ADD COLUMN ${BUMPED_COLUMN_DEF}`);
    db.prepare(`UPDATE ${STATE_TABLE} SET bumped_generation = generation WHERE id = 1`).run();
  }
  const width = (readState(db) as { journalWidth: number }).journalWidth;
  db.exec(`DROP TABLE IF EXISTS main.${PENDING_TABLE}`);
  const pendingDdl = metadataDdl(width).find((sql) => sql.startsWith(`CREATE TABLE ${PENDING_TABLE} `));
  if (pendingDdl === undefined) throw new Error('unreachable: no pending table DDL');
  db.exec(pendingDdl);
  // Format 1 pruned every 1,024 seqs (see PRUNE_INTERVAL).
  db.exec(`DROP TRIGGER IF EXISTS main.${PRUNE_TRIGGER}`);
  db.exec(metadataDdl(width).at(-1) as string);
  db.prepare(`UPDATE ${STATE_TABLE} SET format = ? WHERE id = 1`).run(FORMAT_VERSION);
  forgetArming(db);
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
  db.prepare(
    `INSERT INTO ${SCHEMA_TABLE} (id, before, after) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET before = excluded.before, after = excluded.after`,
  ).run(before, after);
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

function ensureJournalWidth(db: Db, width: number): void {
  const state = readState(db);
  if (state === undefined || state.journalWidth >= width) return;
  // ADD COLUMN rewrites nothing; old rows read the new columns as NULL.
  for (let i = state.journalWidth; i < width; i++) {
    db.exec(`ALTER TABLE ${JOURNAL_TABLE} ADD COLUMN ${journalColumn(i)}`);
    db.exec(`ALTER TABLE ${PENDING_TABLE} ADD COLUMN ${journalColumn(i)}`);
  }
  db.prepare(`UPDATE ${STATE_TABLE} SET journal_width = ? WHERE id = 1`).run(width);
}

/** Installs (or re-installs) the three triggers of one table and records exactly what was installed. */
export function arm(db: Db, tid: number | undefined, info: TableInfo, mode: CaptureMode, prior: CapturedTable | undefined): number {
  ensureJournalWidth(db, journalWidthFor(info, mode));
  const state = readState(db);
  if (state === undefined) throw new Error('unreachable: capture state missing');
  let id = tid;
  if (id === undefined) {
    const r = db.prepare(`SELECT coalesce(max(tid), 0) + 1 AS t FROM ${TABLES_TABLE}`).get() as { t: bigint };
    id = Number(r.t);
  }
  const names = triggerNames(id);
  for (const n of Object.values(names)) db.exec(`DROP TRIGGER IF EXISTS main.${quoteIdent(n)}`);
  // Notes left by writes that did not happen are in the old layout: never read them with the new one.
  db.prepare(`DELETE FROM ${PENDING_TABLE} WHERE tid = ?`).run(id);
  const inputs = guardInputs(db, info.name);
  const sql = buildTriggers(id, info, mode, inputs);
  // In this order: it decides the firing order (newest first).
  for (const t of sql.all) db.exec(t.sql);
  const stored = (name: string) =>
    (db.prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'trigger' AND name = ?").get(name) as { sql: string }).sql;
  const storedOrNull = (name: string, made: string | null) => (made === null ? null : stored(name));
  const columns = info.columns.map((c) => c.name);
  db.prepare(
    `INSERT INTO ${TABLES_TABLE} (tid, name, mode, columns, key_columns, fingerprint, armed_generation, armed_seq, insert_trigger, update_trigger, delete_trigger, before_insert_trigger, before_update_trigger)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (tid) DO UPDATE SET name = excluded.name, mode = excluded.mode, columns = excluded.columns, key_columns = excluded.key_columns,
       fingerprint = excluded.fingerprint, armed_generation = excluded.armed_generation, armed_seq = excluded.armed_seq,
       insert_trigger = excluded.insert_trigger, update_trigger = excluded.update_trigger, delete_trigger = excluded.delete_trigger,
       before_insert_trigger = excluded.before_insert_trigger, before_update_trigger = excluded.before_update_trigger`,
  ).run(
    id,
    info.name,
    mode,
    JSON.stringify(columns),
    JSON.stringify(info.keyColumns),
    captureFingerprint(info, inputs.uniques),
    state.generation,
    highWaterMark(db),
    stored(names.insert),
    stored(names.update),
    stored(names.delete),
    storedOrNull(names.beforeInsert, sql.beforeInsert),
    storedOrNull(names.beforeUpdate, sql.beforeUpdate),
  );
  db.prepare(`INSERT INTO ${LAST_TABLE} (tid, seq) VALUES (?, ?) ON CONFLICT (tid) DO NOTHING`).run(id, prior?.lastSeq ?? 0);
  return id;
}

export { hasCapture };
