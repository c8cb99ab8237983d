import type { Db } from '../sqlite/index.ts';
import { shellWord } from '../sqlite/index.ts';
import { FailClosedError } from '../errors.ts';
import { readState, readTables } from './catalog.ts';
import { enableCommand } from './enable-hint.ts';
import { CONSUMERS_TABLE, JOURNAL_TABLE, LAST_TABLE, PENDING_TABLE, TABLES_TABLE, pendingDdl, type CaptureMode } from './schema.ts';

/*
 * A table of a source's capture dropped outside sluice (a schema tool that
 * drops what its model does not declare, a cleanup in the sqlite3 shell):
 * `_sluice_state` is there, so the source reads as captured, but the
 * commands that read the missing table fail (sync, without the
 * acknowledgements), and so may the application's own writes. Said the
 * same way wherever it is found: by the CLI when SQLite reports "no such
 * table", by status, and by health, which reads the source for each
 * projection. All but one are repaired by capturing again (disable, then
 * enable; every reader rebuilds). The pending table is scratch space the
 * REPLACE guards fill and empty inside one statement: without it every
 * write those guards see fails in the writer ("no such table"), so no
 * write went unrecorded, and enable makes it again, empty, with no rebuild.
 */

/**
 * The capture's tables that every format has, besides the state row's
 * (without which a source has no capture: CAPTURE_ABSENT); the ones whose
 * repair is to capture again first.
 */
const CAPTURE_TABLES: readonly string[] = [TABLES_TABLE, JOURNAL_TABLE, LAST_TABLE, CONSUMERS_TABLE, PENDING_TABLE];

/** The tables of the capture of `db` that are missing from its main schema, in CAPTURE_TABLES' order (for a source with capture). */
export function missingCaptureTables(db: Db): string[] {
  const have = new Set(
    db
      .prepare(`SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name IN (${CAPTURE_TABLES.map(() => '?').join(', ')})`)
      .pluck()
      .all(...CAPTURE_TABLES) as string[],
  );
  return CAPTURE_TABLES.filter((t) => !have.has(t));
}

/**
 * CAPTURE_DAMAGED for `source` (as the user named it), its table `table`
 * missing: what that breaks and the repair. For the pending table, enable
 * names `captured` (one table the source captures, with its mode) when known.
 */
export function damagedCaptureError(
  source: string,
  table: string,
  options: { readonly cause?: unknown; readonly captured?: { readonly name: string; readonly mode: CaptureMode } } = {},
): FailClosedError {
  const src = shellWord(source);
  const { cause, captured } = options;
  const enable =
    captured === undefined
      ? `sluice enable ${src} TABLE (a table it captures, with its --mode)`
      : `${enableCommand(source, [captured.name])}${captured.mode === 'images' ? '' : ` --mode ${captured.mode}`}`;
  return new FailClosedError(
    'CAPTURE_DAMAGED',
    table === PENDING_TABLE
      ? `Source ${source}: sluice's table ${table} is missing (dropped outside sluice), so writes to the captured tables fail in the application (no such table: main.${table}). It holds nothing between statements: ${enable} makes it again, and no reader rebuilds.`
      : `Source ${source}: sluice's table ${table} is missing (dropped outside sluice), so its capture cannot be read. Remove what is left of the capture with sluice disable ${src}, then capture again with sluice enable ${src} TABLE...; every reader of it rebuilds once.`,
    { table },
    cause === undefined ? {} : { cause },
  );
}

/** CAPTURE_DAMAGED when a table of the capture of `db` (a source with capture) is missing; undefined when none is. */
export function damagedCapture(db: Db, source: string = db.name): FailClosedError | undefined {
  const table = missingCaptureTables(db)[0];
  if (table === undefined) return undefined;
  // Only the pending table missing: the catalog is there to name a table enable repairs it with.
  const captured = table === PENDING_TABLE ? readTables(db)[0] : undefined;
  return damagedCaptureError(source, table, captured === undefined ? {} : { captured });
}

/**
 * enable's repair: the pending table made again, empty, when it was
 * dropped outside sluice (see above). Inside enable's write transaction.
 * Returns the tables it made.
 */
export function remakePending(db: Db): string[] {
  const state = readState(db);
  if (state === undefined || !missingCaptureTables(db).includes(PENDING_TABLE)) return [];
  db.exec(pendingDdl(state.journalWidth));
  return [PENDING_TABLE];
}
