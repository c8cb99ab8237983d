import type { Db, TableInfo } from '../sqlite/index.ts';
import { CaptureRefusedError } from '../errors.ts';
import { quoteIdent } from '../sqlite/index.ts';
import { captureFingerprint } from './table-fingerprint.ts';
import { readState, highWaterMark, type CapturedTable } from './catalog.ts';
import { buildTriggers, journalWidthFor } from './triggers.ts';
import { guardInputs } from './guard-inputs.ts';
import { capturedColumns, generatedFromExcluded, generatedFromExcludedDetail } from './excluded.ts';
import { recordExclusion } from './exclusion-change.ts';
import {
  FLUSH_VIEW_IF_MISSING,
  JOURNAL_TABLE,
  LAST_TABLE,
  PENDING_TABLE,
  STATE_TABLE,
  TABLES_TABLE,
  journalColumn,
  triggerNames,
  type CaptureMode,
} from './schema.ts';

/*
 * Arming one table: its triggers made (again) against its shape, less the
 * columns it leaves out of capture, and its catalog row recording exactly
 * what was installed. enable, the automatic re-arm and sluice alter call it,
 * inside their write transaction.
 */

/** SQLite's most columns in a table (SQLITE_MAX_COLUMN, as built into the driver and the sqlite3 CLI and Python alike). */
const SQLITE_MAX_COLUMN = 2000;
/** The journal's columns besides the images: seq, tid, op, ts and the mask. */
const JOURNAL_OWN_COLUMNS = 5;
/** The most image columns the journal can hold: both images of 997 columns. */
const MAX_JOURNAL_WIDTH = SQLITE_MAX_COLUMN - JOURNAL_OWN_COLUMNS;

function tooWide(table: string, columns: number, mode: CaptureMode): CaptureRefusedError {
  const most = Math.floor(MAX_JOURNAL_WIDTH / 2);
  const what = mode === 'keys' ? `its ${columns} key columns` : `its ${columns} columns`;
  return new CaptureRefusedError(
    'TABLE_TOO_WIDE',
    table,
    `Table ${table}: capture journals both images of ${what}, two journal columns each, and the journal holds at most ${MAX_JOURNAL_WIDTH} image columns (SQLite's ${SQLITE_MAX_COLUMN} columns a table, less its own ${JOURNAL_OWN_COLUMNS}): at most ${most} captured columns. Fix: leave at least ${columns - most} of them out of capture (sluice enable DB ${table} --exclude COLUMN,...)${mode === 'images' ? ', or capture it in keys mode (--mode keys)' : ''}.`,
  );
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
export function arm(
  db: Db,
  tid: number | undefined,
  info: TableInfo,
  mode: CaptureMode,
  prior: CapturedTable | undefined,
  excluded: readonly string[],
): number {
  // Every caller checks this first; a path that did not (sluice alter adding such a column) must not journal the value.
  const generated = generatedFromExcluded(info, excluded);
  if (generated.length > 0)
    throw new CaptureRefusedError(
      'GENERATED_FROM_EXCLUDED',
      info.name,
      `Table ${info.name}: ${generatedFromExcludedDetail(info.name, generated)}.`,
    );
  const width = journalWidthFor(info, mode, excluded);
  if (width > MAX_JOURNAL_WIDTH) throw tooWide(info.name, width / 2, mode);
  ensureJournalWidth(db, width);
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
  const sql = buildTriggers(id, info, mode, inputs, { excluded });
  db.exec(FLUSH_VIEW_IF_MISSING);
  // In this order: it decides the firing order (newest first).
  for (const t of sql.all) db.exec(t.sql);
  const stored = (name: string) =>
    (db.prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'trigger' AND name = ?").get(name) as { sql: string }).sql;
  const storedOrNull = (name: string, made: string | null) => (made === null ? null : stored(name));
  const columns = capturedColumns(info, excluded).map((c) => c.name);
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
  recordExclusion(db, id, excluded, info);
  // prior.lastSeq is the table's last seq as readers see it (its row or a newer event after the checkpoint). A
  // row left for this tid by the tick (the newest event of a table disabled since, which disable keeps) is replaced.
  db.prepare(`INSERT INTO ${LAST_TABLE} (tid, seq) VALUES (?, ?) ON CONFLICT (tid) DO UPDATE SET seq = excluded.seq`).run(
    id,
    prior?.lastSeq ?? 0,
  );
  return id;
}
