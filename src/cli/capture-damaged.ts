import type { Command } from 'commander';
import { FailClosedError, SluiceError, errorCode } from '../index.ts';
import { CAPTURE_RELATIONS, errorMessage, shellWord } from '../internal.ts';
import { filesOf } from './file-arguments.ts';

/*
 * A table of a source's capture dropped outside sluice (a schema tool that
 * drops what its model does not declare, a cleanup in the sqlite3 shell):
 * `_sluice_state` is there, so the source reads as captured, and the first
 * statement that reads the missing table fails with SQLite's bare "no such
 * table: main._sluice_journal". The CLI names the source it was given, the
 * table, and the way back: disable (which removes what is left, whatever is
 * missing) and enable again; its readers then rebuild once.
 */

/** `err` as CAPTURE_DAMAGED naming the source, when it is SQLite's "no such table" for one of the capture's tables; `err` otherwise. */
export function namingDamagedCapture(err: unknown, command: Command | undefined): unknown {
  if (err instanceof SluiceError || command === undefined || errorCode(err) !== 'SQLITE_ERROR') return err;
  const table = /^no such table: (?:[A-Za-z0-9_]+\.)?(_sluice_[a-z_]+)$/.exec(errorMessage(err) ?? '')?.[1];
  const source = filesOf(command).find((f) => f.role === 'source');
  if (table === undefined || !CAPTURE_RELATIONS.includes(table) || source === undefined) return err;
  const src = shellWord(source.file);
  return new FailClosedError(
    'CAPTURE_DAMAGED',
    `Source ${source.file}: sluice's table ${table} is missing (dropped outside sluice), so its capture cannot be read. Remove what is left of the capture with sluice disable ${src}, then capture again with sluice enable ${src} TABLE...; every reader of it rebuilds once.`,
    { table },
    { cause: err },
  );
}
