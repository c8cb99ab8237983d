import fs from 'node:fs';
import path from 'node:path';
import { SluiceError, errorCode } from '../errors.ts';

/*
 * Write access to a database means two things: the file itself, and its
 * folder, where SQLite makes (and on the last close removes) the file's
 * -wal and -shm in WAL mode, or its -journal in rollback mode. In WAL mode
 * even a reader needs the -shm, so a reader fails in a folder it may not
 * write unless another connection keeps the -wal and -shm there.
 */

/** The error code (EACCES, EPERM, EROFS) when this user may not write `p`; undefined when it may, or `p` is missing. */
function denied(p: string): string | undefined {
  try {
    fs.accessSync(p, fs.constants.W_OK);
    return undefined;
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT') return undefined; // a missing file is another error, reported by whoever opens it
    return typeof code === 'string' ? code : 'EACCES';
  }
}

/**
 * Refuses (DB_NOT_WRITABLE) a database that `command` must write when this
 * user may not write it or its folder; `writes` says what the command writes
 * there and why.
 */
export function requireWriteAccess(file: string, role: string, command: string, writes: string): void {
  const problem = writeAccessProblem(file, role);
  if (problem === undefined) return;
  const reading = problem.folderDenied ? '' : '; reading needs none: status, changes and export work as they are';
  throw new SluiceError(
    'DB_NOT_WRITABLE',
    `Cannot ${command} ${role} ${file}: this user may not write ${problem.what}. ${writes}. Give this user write access to ${problem.grant}${reading}.`,
  );
}

/**
 * What this user may not write of database `file` (the `role`'s): the file,
 * its folder (where SQLite makes its -wal and -shm, or -journal), or both,
 * said (`what`), with the paths to grant access to (`grant`); undefined
 * when it may write both. For every message that says so (sync's refusal
 * above, the CLI's naming of a bare SQLITE_READONLY).
 */
export function writeAccessProblem(
  file: string,
  role: string,
): { readonly what: string; readonly grant: string; readonly folderDenied: boolean } | undefined {
  const folder = path.dirname(path.resolve(file));
  const onFile = denied(file);
  const onFolder = denied(folder);
  if (onFile === undefined && onFolder === undefined) return undefined;
  const what = [
    ...(onFile === undefined ? [] : [`the file (${onFile})`]),
    ...(onFolder === undefined
      ? []
      : [`its folder ${folder} (${onFolder}), where SQLite makes the ${role}'s -wal and -shm (or -journal) files to write it`]),
  ].join(' nor ');
  const grant = [...(onFile === undefined ? [] : [file]), ...(onFolder === undefined ? [] : [folder])].join(' and ');
  return { what, grant, folderDenied: onFolder !== undefined };
}

/**
 * What to say when SQLite cannot open `file` (SQLITE_CANTOPEN or
 * SQLITE_READONLY*, before any statement of ours ran) in a folder this user
 * may not write: that it is the folder. Undefined otherwise.
 */
export function folderNotWritable(file: string, role: string, sqliteCode: unknown): SluiceError | undefined {
  if (typeof sqliteCode !== 'string' || !(sqliteCode.startsWith('SQLITE_CANTOPEN') || sqliteCode.startsWith('SQLITE_READONLY')))
    return undefined;
  const folder = path.dirname(path.resolve(file));
  const code = denied(folder);
  if (code === undefined) return undefined;
  const base = path.basename(file);
  return new SluiceError(
    'DB_NOT_WRITABLE',
    `Cannot open ${role} ${file}: this user may not write its folder ${folder} (${code}), and SQLite must make ${base}-shm there to read a database in WAL mode (and ${base}-wal to write one). Give this user write access to ${folder}.`,
  );
}
