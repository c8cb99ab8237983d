import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { SluiceError, errorCode } from '../index.ts';
import { filesOf } from './file-arguments.ts';

/*
 * A file this user may not write (sluice run as another user than the
 * app's, a file or folder a deploy left read-only, a read-only mount).
 * SQLite opens such a database read-only, and the first write fails with
 * "SQLITE_READONLY: attempt to write a readonly database", naming no file;
 * a new file Node cannot make fails with "EACCES: permission denied, open
 * 'x'". The CLI names the database the user gave (DB_NOT_WRITABLE), or the
 * path (ACCESS_DENIED), and the access that is missing. (sync refuses a
 * source it may not write before it starts: requireWriteAccess.)
 */

const DENIED = new Set(['EACCES', 'EPERM', 'EROFS']);

/** The code (EACCES, EPERM, EROFS) when this user may not write `p`; undefined when it may, or cannot tell. */
function denied(p: string): string | undefined {
  try {
    fs.accessSync(p, fs.constants.W_OK);
    return undefined;
  } catch (err) {
    const code = errorCode(err);
    return typeof code === 'string' && DENIED.has(code) ? code : undefined;
  }
}

/** `err` as DB_NOT_WRITABLE or ACCESS_DENIED naming the file, when it is one of the bare errors above; `err` otherwise. */
export function namingUnwritable(err: unknown, command: Command | undefined): unknown {
  if (err instanceof SluiceError || command === undefined) return err;
  const code = errorCode(err);
  if (typeof code !== 'string') return err;
  const name = command.name();
  const at = (err as { path?: unknown }).path;
  if (DENIED.has(code) && typeof at === 'string')
    return new SluiceError(
      'ACCESS_DENIED',
      `Cannot ${(err as { syscall?: unknown }).syscall === 'mkdir' ? 'make the folder' : 'open'} ${at}: this user may not (${code}). Give this user write access to it (to its folder ${path.dirname(path.resolve(at))}, to make it there), or pass a path it may write.`,
      { cause: err },
    );
  const files = filesOf(command);
  if (!code.startsWith('SQLITE_READONLY') || code === 'SQLITE_READONLY_ROLLBACK' || files.length !== 1) return err;
  const { role, file } = files[0] as { role: string; file: string };
  const folder = path.dirname(path.resolve(file));
  const onFile = denied(file);
  const onFolder = denied(folder);
  const what = [
    ...(onFile === undefined ? [] : [`the file (${onFile})`]),
    ...(onFolder === undefined
      ? []
      : [`its folder ${folder} (${onFolder}), where SQLite makes the -wal and -shm (or -journal) files to write it`]),
  ];
  const grant = [...(onFile === undefined ? [] : [file]), ...(onFolder === undefined ? [] : [folder])];
  return new SluiceError(
    'DB_NOT_WRITABLE',
    what.length === 0
      ? `Cannot ${name} ${role} ${file}: SQLite opened it read-only (${code}: a read-only file system, or a file or folder this user may not write). Give this user write access to it and its folder, or run sluice ${name} as a user that has it.`
      : `Cannot ${name} ${role} ${file}: this user may not write ${what.join(' nor ')}. Give this user write access to ${grant.join(' and ')}, or run sluice ${name} as a user that has it.`,
    { cause: err },
  );
}
