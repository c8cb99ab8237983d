import path from 'node:path';
import type { Command } from 'commander';
import { SluiceError, errorCode } from '../index.ts';
import { writeAccessProblem } from '../internal.ts';
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
  if (!code.startsWith('SQLITE_READONLY') || code === 'SQLITE_READONLY_ROLLBACK' || files.length === 0) return err;
  // Of a command given two (sync, reinit, verify: a source and a target), the one this user may not write.
  const denied = files.filter((f) => writeAccessProblem(f.file, f.role) !== undefined);
  const one = files.length === 1 ? files[0] : denied.length === 1 ? denied[0] : undefined;
  if (one === undefined)
    return new SluiceError(
      'DB_NOT_WRITABLE',
      `Cannot ${name} ${files.map((f) => `${f.role} ${f.file}`).join(' and ')}: SQLite opened ${denied.length === 0 ? 'one of them' : 'them'} read-only (${code}: a read-only file system, or a file or folder this user may not write). Give this user write access to ${denied.length === 0 ? 'each' : 'them'} and ${denied.length === 0 ? 'its' : 'their'} folder, or run sluice ${name} as a user that has it.`,
      { cause: err },
    );
  const { role, file } = one;
  const problem = writeAccessProblem(file, role);
  return new SluiceError(
    'DB_NOT_WRITABLE',
    problem === undefined
      ? `Cannot ${name} ${role} ${file}: SQLite opened it read-only (${code}: a read-only file system, or a file or folder this user may not write). Give this user write access to it and its folder, or run sluice ${name} as a user that has it.`
      : `Cannot ${name} ${role} ${file}: this user may not write ${problem.what}. Give this user write access to ${problem.grant}, or run sluice ${name} as a user that has it.`,
    { cause: err },
  );
}
