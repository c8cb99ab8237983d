import type { Db } from '../sqlite/index.ts';
import { shellWord } from '../sqlite/index.ts';
import { FailClosedError } from '../errors.ts';
import { CONSUMERS_TABLE, JOURNAL_TABLE, LAST_TABLE, PENDING_TABLE, TABLES_TABLE } from './schema.ts';

/*
 * A table of a source's capture dropped outside sluice (a schema tool that
 * drops what its model does not declare, a cleanup in the sqlite3 shell):
 * `_sluice_state` is there, so the source reads as captured, but the
 * commands that read the missing table fail (sync, without the
 * acknowledgements), and so may the application's own writes. Said the
 * same way wherever it is found: by the CLI when SQLite reports "no such
 * table", and by health, which reads the source for each projection.
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

/** CAPTURE_DAMAGED for `source` (as the user named it), its table `table` missing: what that breaks and the repair. */
export function damagedCaptureError(source: string, table: string, options: { readonly cause?: unknown } = {}): FailClosedError {
  const src = shellWord(source);
  return new FailClosedError(
    'CAPTURE_DAMAGED',
    `Source ${source}: sluice's table ${table} is missing (dropped outside sluice), so its capture cannot be read. Remove what is left of the capture with sluice disable ${src}, then capture again with sluice enable ${src} TABLE...; every reader of it rebuilds once.`,
    { table },
    options,
  );
}

/** CAPTURE_DAMAGED when a table of the capture of `db` (a source with capture) is missing; undefined when none is. */
export function damagedCapture(db: Db, source: string = db.name): FailClosedError | undefined {
  const table = missingCaptureTables(db)[0];
  return table === undefined ? undefined : damagedCaptureError(source, table);
}
