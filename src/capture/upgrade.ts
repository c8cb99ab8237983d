import type { Db } from '../sqlite/index.ts';
import { describeTable, quoteIdent } from '../sqlite/index.ts';
import { readState } from './catalog.ts';
import { armedAsFormat2, forgetArming } from './arming.ts';
import { buildTriggers } from './triggers.ts';
import { guardInputs } from './guard-inputs.ts';
import {
  BUMPED_COLUMN_DEF,
  FORMAT_VERSION,
  JOURNAL_TABLE,
  MASK_COLUMN,
  PENDING_TABLE,
  PRUNE_TRIGGER,
  STATE_TABLE,
  TABLES_TABLE,
  legacyStateDdl,
  metadataDdl,
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
  const pendingDdl = metadataDdl(width).find((sql) => sql.startsWith(`CREATE TABLE ${PENDING_TABLE} `));
  if (pendingDdl === undefined) throw new Error('unreachable: no pending table DDL');
  db.exec(pendingDdl);
  // Format 1 pruned every 1,024 seqs (see PRUNE_INTERVAL).
  db.exec(`DROP TRIGGER IF EXISTS main.${PRUNE_TRIGGER}`);
  db.exec(metadataDdl(width).at(-1) as string);
  addMaskColumn(db);
  db.prepare(`UPDATE ${STATE_TABLE} SET format = ? WHERE id = 1`).run(FORMAT_VERSION);
  forgetArming(db);
}

/*
 * Format 2 -> 3: the journal gains its mask column (ADD COLUMN rewrites
 * nothing; the events already there read NULL, every column changed, which
 * is what they hold), and each table that format 2 armed gets this build's
 * triggers in place: dropped and made again in one transaction, no write
 * can fall between, so it keeps its armed generation and its readers their
 * cursors. A table that was not armed is left to enable's re-arm loop (its
 * readers rebuild, as for any re-arm). Returns the tables upgraded in place.
 */
export function upgradeFormat2(db: Db): string[] {
  const state = readState(db);
  if (state === undefined) throw new Error('unreachable: capture state missing');
  const armed = armedAsFormat2(db, state);
  addMaskColumn(db);
  const stored = db.prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'trigger' AND name = ?").pluck();
  const record = db.prepare(
    `UPDATE ${TABLES_TABLE} SET insert_trigger = ?, update_trigger = ?, delete_trigger = ?, before_insert_trigger = ?, before_update_trigger = ? WHERE tid = ?`,
  );
  for (const table of armed) {
    const info = describeTable(db, table.name);
    if (info === undefined) continue;
    const names = triggerNames(table.tid);
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

/** Adds the journal's mask column, with exactly the text a fresh journal has it (see MASK_COLUMN), unless it is there. */
function addMaskColumn(db: Db): void {
  const has = db.prepare(`SELECT 1 FROM main.pragma_table_info(?) WHERE name = ?`).pluck().get(JOURNAL_TABLE, MASK_COLUMN);
  if (has === undefined) db.exec(`ALTER TABLE ${JOURNAL_TABLE} ADD COLUMN ${MASK_COLUMN}`);
}
