import type { Db } from '../sqlite/index.ts';
import { describeTable, quoteIdent } from '../sqlite/index.ts';
import { readState } from './catalog.ts';
import { armedAsLegacy, forgetArming } from './arming.ts';
import { buildTriggers } from './triggers.ts';
import { guardInputs } from './guard-inputs.ts';
import {
  BUMPED_COLUMN_DEF,
  FLUSH_VIEW_IF_MISSING,
  FORMAT_VERSION,
  JOURNAL_TABLE,
  LAST_CHECKPOINT_TID,
  LAST_TABLE,
  MASK_COLUMN,
  PENDING_TABLE,
  PRUNE_TRIGGER,
  STATE_TABLE,
  TABLES_TABLE,
  TICK_TRIGGER,
  TICK_VIEW,
  legacyStateDdl,
  pendingDdl,
  tickDdl,
  triggerNames,
} from './schema.ts';

/*
 * In-place upgrades of an older capture format, inside enable's write
 * transaction (enable decides which runs, see UPGRADABLE_FORMATS).
 */

/*
 * Format 1 -> current: the state gains bumped_generation (with the text a
 * fresh table has), the pending scratch table (empty between statements) is
 * made again with its hw column, the journal gains its mask column, and
 * every table's triggers no longer match what this build makes, so the
 * re-arm loop re-installs them and the generation moves.
 */
export function upgradeFormat1(db: Db): void {
  const stateSql = db.prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?").pluck().get(STATE_TABLE);
  if (stateSql === legacyStateDdl()) {
    db.exec(`ALTER TABLE ${STATE_TABLE} ADD COLUMN ${BUMPED_COLUMN_DEF}`);
    db.prepare(`UPDATE ${STATE_TABLE} SET bumped_generation = generation WHERE id = 1`).run();
  }
  const width = (readState(db) as { journalWidth: number }).journalWidth;
  db.exec(`DROP TABLE IF EXISTS main.${PENDING_TABLE}`);
  db.exec(pendingDdl(width));
  // Format 1 pruned every 1,024 seqs (see PRUNE_INTERVAL).
  installTick(db);
  addMaskColumn(db);
  db.prepare(`UPDATE ${STATE_TABLE} SET format = ? WHERE id = 1`).run(FORMAT_VERSION);
  forgetArming(db);
}

/*
 * Format 2, 3 or 4 -> 5: the journal gains its mask column if it has none
 * (format 2; ADD COLUMN rewrites nothing; the events already there read
 * NULL, every column changed, which is what they hold) and its tick (the
 * checkpoint of `_sluice_last` starts at the newest seq: the rows format 2
 * and 3 kept are exact up to it), and each table that the old format armed
 * gets this build's triggers in place: dropped and made again in one
 * transaction, no write can fall between, so it keeps its armed generation
 * and its readers their cursors. What an event holds is unchanged. A table
 * that was not armed is left to enable's re-arm loop (its readers rebuild,
 * as for any re-arm). Returns the tables upgraded in place.
 */
export function upgradeInPlace(db: Db): string[] {
  const state = readState(db);
  if (state === undefined) throw new Error('unreachable: capture state missing');
  const armed = armedAsLegacy(db, state);
  addMaskColumn(db);
  installTick(db);
  db.exec(FLUSH_VIEW_IF_MISSING);
  const stored = db.prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'trigger' AND name = ?").pluck();
  const record = db.prepare(
    `UPDATE ${TABLES_TABLE} SET insert_trigger = ?, update_trigger = ?, delete_trigger = ?, before_insert_trigger = ?, before_update_trigger = ? WHERE tid = ?`,
  );
  for (const table of armed) {
    const info = describeTable(db, table.name);
    if (info === undefined) continue;
    const names = triggerNames(table.tid);
    // Format 5's flush is in two triggers (one on the pending table, made here with the others).
    for (const n of Object.values(names)) db.exec(`DROP TRIGGER IF EXISTS main.${quoteIdent(n)}`);
    db.prepare(`DELETE FROM ${PENDING_TABLE} WHERE tid = ?`).run(table.tid);
    const sql = buildTriggers(table.tid, info, table.mode, guardInputs(db, table.name), { excluded: table.excluded });
    // In this order: it decides the firing order (newest first).
    for (const t of sql.all) db.exec(t.sql);
    const get = (name: string, made: string | null) => (made === null ? null : (stored.get(name) as string));
    record.run(
      get(names.insert, sql.insert),
      get(names.update, sql.update),
      get(names.delete, sql.delete),
      get(names.beforeInsert, sql.beforeInsert),
      get(names.beforeUpdate, sql.beforeUpdate),
      table.tid,
    );
  }
  db.prepare(`UPDATE ${STATE_TABLE} SET format = ? WHERE id = 1`).run(FORMAT_VERSION);
  forgetArming(db);
  return armed.map((t) => t.name);
}

/**
 * Makes the journal's tick as this build makes it (the prune trigger, its
 * view and the view's trigger), and the checkpoint row of `_sluice_last` at
 * the newest seq when it has none (the older formats kept every row exact).
 */
function installTick(db: Db): void {
  db.exec(`DROP TRIGGER IF EXISTS main.${PRUNE_TRIGGER}`);
  db.exec(`DROP TRIGGER IF EXISTS main.${TICK_TRIGGER}`);
  db.exec(`DROP VIEW IF EXISTS main.${TICK_VIEW}`);
  for (const sql of tickDdl()) db.exec(sql);
  db.prepare(
    `INSERT INTO ${LAST_TABLE} (tid, seq) VALUES (${LAST_CHECKPOINT_TID}, (SELECT coalesce(max(seq), 0) FROM ${JOURNAL_TABLE})) ON CONFLICT (tid) DO NOTHING`,
  ).run();
}

/** Adds the journal's mask column, with exactly the text a fresh journal has it (see MASK_COLUMN), unless it is there. */
function addMaskColumn(db: Db): void {
  const has = db.prepare(`SELECT 1 FROM main.pragma_table_info(?) WHERE name = ?`).pluck().get(JOURNAL_TABLE, MASK_COLUMN);
  if (has === undefined) db.exec(`ALTER TABLE ${JOURNAL_TABLE} ADD COLUMN ${MASK_COLUMN}`);
}
