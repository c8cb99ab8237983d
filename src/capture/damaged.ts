import type { Db } from '../sqlite/index.ts';
import { shellWord } from '../sqlite/index.ts';
import { FailClosedError } from '../errors.ts';
import { readState, readTables } from './catalog.ts';
import { enableCommand } from './enable-hint.ts';
import { isOwnTableSql } from './gates.ts';
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
 * A table made again by hand under the name (someone read "no such table"
 * and created one) is not sluice's: the writes its guards see fail the
 * same way ("no column named c0"), and enable refuses to touch it
 * (NAMESPACE_COLLISION), so the repair is to drop it first. Whether a
 * table is sluice's is enable's own rule (isOwnTableSql).
 */

/**
 * The capture's tables that every format has, besides the state row's
 * (without which a source has no capture: CAPTURE_ABSENT); the ones whose
 * repair is to capture again first.
 */
const CAPTURE_TABLES: readonly string[] = [TABLES_TABLE, JOURNAL_TABLE, LAST_TABLE, CONSUMERS_TABLE, PENDING_TABLE];

/** A table of the capture that is missing, or there but not as sluice makes it (`foreign`). */
interface DamagedTable {
  readonly table: string;
  readonly foreign: boolean;
}

/** The tables of the capture of `db` that are missing from its main schema or not sluice's, in CAPTURE_TABLES' order (for a source with capture). */
function damagedTables(db: Db): DamagedTable[] {
  const sql = new Map(
    (
      db
        .prepare(`SELECT name, sql FROM main.sqlite_schema WHERE type = 'table' AND name IN (${CAPTURE_TABLES.map(() => '?').join(', ')})`)
        .all(...CAPTURE_TABLES) as { name: string; sql: string | null }[]
    ).map((r) => [r.name, r.sql]),
  );
  return CAPTURE_TABLES.flatMap((table): DamagedTable[] => {
    if (!sql.has(table)) return [{ table, foreign: false }];
    return isOwnTableSql(table, sql.get(table) ?? null) ? [] : [{ table, foreign: true }];
  });
}

/** The tables of the capture of `db` that are missing from its main schema, in CAPTURE_TABLES' order (for a source with capture). */
export function missingCaptureTables(db: Db): string[] {
  return damagedTables(db)
    .filter((d) => !d.foreign)
    .map((d) => d.table);
}

/**
 * CAPTURE_DAMAGED for `source` (as the user named it), its table `table`
 * missing (or, `foreign`, there but not as sluice makes it): what that
 * breaks and the repair. For the pending table, enable names `captured`
 * (one table the source captures, with its mode) when known.
 */
export function damagedCaptureError(
  source: string,
  table: string,
  options: {
    readonly cause?: unknown;
    readonly captured?: { readonly name: string; readonly mode: CaptureMode };
    readonly foreign?: boolean;
  } = {},
): FailClosedError {
  const src = shellWord(source);
  const { cause, captured, foreign = false } = options;
  const enable =
    captured === undefined
      ? `sluice enable ${src} TABLE (a table it captures, with its --mode)`
      : `${enableCommand(source, [captured.name])}${captured.mode === 'images' ? '' : ` --mode ${captured.mode}`}`;
  const what = foreign
    ? `${table} is not the table sluice makes (dropped and made again outside sluice, with another shape)`
    : `${table} is missing (dropped outside sluice)`;
  const drop = foreign ? `drop it (sqlite3 ${src} 'DROP TABLE ${table}'), then ` : '';
  return new FailClosedError(
    'CAPTURE_DAMAGED',
    table === PENDING_TABLE
      ? `Source ${source}: sluice's table ${what}, so writes to the captured tables fail in the application (${foreign ? `table ${table} has no column named ...` : `no such table: main.${table}`}). It holds nothing between statements: ${drop}${enable} makes it again, and no reader rebuilds.`
      : `Source ${source}: sluice's table ${what}, so its capture cannot be read. ${foreign ? `Drop it (sqlite3 ${src} 'DROP TABLE ${table}'), remove` : 'Remove'} what is left of the capture with sluice disable ${src}, then capture again with sluice enable ${src} TABLE...; every reader of it rebuilds once.`,
    { table },
    cause === undefined ? {} : { cause },
  );
}

/** CAPTURE_DAMAGED when a table of the capture of `db` (a source with capture) is missing or not sluice's; undefined when none is. */
export function damagedCapture(db: Db, source: string = db.name): FailClosedError | undefined {
  const first = damagedTables(db)[0];
  if (first === undefined) return undefined;
  const { table, foreign } = first;
  // Only the pending table damaged: the catalog is there to name a table enable repairs it with.
  const captured = table === PENDING_TABLE ? readTables(db)[0] : undefined;
  return damagedCaptureError(source, table, { foreign, ...(captured === undefined ? {} : { captured }) });
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
