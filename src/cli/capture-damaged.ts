import type { Command } from 'commander';
import { SluiceError, errorCode } from '../index.ts';
import { CAPTURE_RELATIONS, damagedCaptureError, errorMessage } from '../internal.ts';
import { filesOf } from './file-arguments.ts';

/*
 * A table of a source's capture dropped outside sluice (a schema tool that
 * drops what its model does not declare, a cleanup in the sqlite3 shell):
 * `_sluice_state` is there, so the source reads as captured, and the first
 * statement that reads the missing table fails with SQLite's bare "no such
 * table: main._sluice_journal". The CLI names the source it was given, the
 * table, and the way back: disable (which removes what is left, whatever is
 * missing) and enable again; its readers then rebuild once (capture's
 * damagedCaptureError, which health says too).
 */

/** `err` as CAPTURE_DAMAGED naming the source, when it is SQLite's "no such table" for one of the capture's tables; `err` otherwise. */
export function namingDamagedCapture(err: unknown, command: Command | undefined): unknown {
  if (err instanceof SluiceError || command === undefined || errorCode(err) !== 'SQLITE_ERROR') return err;
  const table = /^no such table: (?:[A-Za-z0-9_]+\.)?(_sluice_[a-z_]+)$/.exec(errorMessage(err) ?? '')?.[1];
  const source = filesOf(command).find((f) => f.role === 'source');
  if (table === undefined || !CAPTURE_RELATIONS.includes(table) || source === undefined) return err;
  return damagedCaptureError(source.file, table, { cause: err });
}
