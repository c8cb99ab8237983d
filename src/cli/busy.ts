import type { Command } from 'commander';
import { SluiceError } from '../index.ts';
import { busyRoleOf, isSqliteBusy } from '../internal.ts';
import { filesOf } from './file-arguments.ts';

/*
 * A file another process holds locked (an app's write transaction left open,
 * or, on a file in a rollback journal mode, its exclusive lock, which keeps
 * readers out too) fails a statement with SQLite's "SQLITE_BUSY: database is
 * locked" once the connection's busy timeout has passed. The error names no
 * file. sync maps it itself (SOURCE_BUSY / TARGET_BUSY, with its
 * --busy-timeout); for every other command, the CLI knows which file each
 * argument is, and says that one: the file, that another process holds it,
 * and to run the command again once that process commits.
 */

const CODES = { source: 'SOURCE_BUSY', target: 'TARGET_BUSY', database: 'DB_BUSY' } as const;

/**
 * The error to report for `err`: a bare SQLITE_BUSY / SQLITE_LOCKED that
 * `command` (the one the user ran) raised, as one naming the file; `err`
 * itself otherwise (a SluiceError names its file already).
 */
export function namingLockedFile(err: unknown, command: Command | undefined): unknown {
  if (err instanceof SluiceError || !isSqliteBusy(err) || command === undefined) return err;
  const name = command.name();
  const files = filesOf(command);
  const marked = busyRoleOf(err);
  const one = files.length === 1 ? files[0] : files.find((f) => f.role === marked);
  const again = `The transaction that needed it was rolled back; run sluice ${name} again once that process commits or ends.`;
  if (one !== undefined)
    return new SluiceError(
      CODES[one.role],
      `${one.role[0]?.toUpperCase()}${one.role.slice(1)} ${one.file} is locked: another process holds a lock on it (a write transaction it has not committed yet), and sluice ${name} gave up waiting for it. ${again}`,
      { cause: err },
    );
  if (files.length === 0) return err;
  return new SluiceError(
    'DB_BUSY',
    `${files.map((f) => `${f.role} ${f.file}`).join(' or ')} is locked: another process holds a lock on one of them (a write transaction it has not committed yet), and sluice ${name} gave up waiting for it. ${again}`,
    { cause: err },
  );
}
