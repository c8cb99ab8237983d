import fs from 'node:fs';
import path from 'node:path';
import { SluiceError, errorCode } from '../errors.ts';
import { describeHolder, realFilePath, tryProcessLock, type ProcessLock } from '../sqlite/index.ts';

/*
 * One export writes an --out at a time (a JSONL file, or a segment folder):
 * two appended to one file and replaced one FILE.cursor in turn, which left
 * batches out of order (no import gets past them) and killed the loser with
 * a raw rename or SQLite error. An export, one-shot or --follow, holds a
 * lock on its --out for as long as it runs: the file OUT.lock beside it
 * (beside the folder for segments), named after the real path of --out (a
 * symlink to it is the same --out), taken before the cursor file is read
 * and anything is written. The operating system frees it when the process
 * ends, however it ends (process-lock.ts): a killed export's lock stops no
 * one, and the file stays (removing it would let two processes lock two
 * files).
 */

/** The lock file of the export writing `out`. */
export function exportLockFile(out: string): string {
  return `${realFilePath(out)}.lock`;
}

/**
 * Takes the lock of the export writing `out` for this process, until
 * `release()` or its end. Throws EXPORT_LOCKED (exit 1), naming the process
 * that holds it and the fix, when another export writes that --out.
 *
 * @example
 * const lock = lockExport('changes.jsonl', 'export --follow');
 * try { follow(); } finally { lock.release(); }
 */
export function lockExport(out: string, command: string): ProcessLock {
  const file = exportLockFile(out);
  let attempt: ReturnType<typeof tryProcessLock>;
  try {
    attempt = tryProcessLock(file, command);
  } catch (err) {
    const code = String(errorCode(err) ?? '');
    if (code !== 'DB_NOT_WRITABLE' && !code.startsWith('SQLITE_READONLY') && code !== 'SQLITE_CANTOPEN') throw err;
    const dir = path.dirname(file);
    // A lock file there that this user may not write (another user's export made it): SQLite opens it read-only.
    if (fs.existsSync(file))
      throw new SluiceError(
        'ACCESS_DENIED',
        `Cannot export to --out ${out}: this user may not write its lock file ${file} (which an export holds while it writes --out; another user's export made it). Give this user write access to ${file}, or remove it while no export of ${out} runs, or pass another --out. Nothing was written.`,
        { cause: err },
      );
    // A folder this user may not write: --out is named (the lock file is sluice's, made beside it), as the export's own write would.
    throw new SluiceError(
      'ACCESS_DENIED',
      `Cannot export to --out ${out}: this user may not make its lock file ${file} (which an export holds while it writes --out) in the folder ${dir}. Give this user write access to ${dir}, or pass an --out in a folder it may write. Nothing was written.`,
      { cause: err },
    );
  }
  if ('taken' in attempt) return attempt.taken;
  const h = attempt.heldBy;
  const who = describeHolder(h, 'sluice ');
  throw new SluiceError(
    'EXPORT_LOCKED',
    `--out ${out} is written by ${who}, which holds its lock ${file}: one export at a time writes an --out (two would append to it and save its cursor in turn, out of order). Nothing was written. Stop that export first${h === undefined ? '' : ` (kill ${h.pid})`}, or export to another --out.`,
  );
}
