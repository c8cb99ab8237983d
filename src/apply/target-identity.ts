import fs from 'node:fs';
import { SluiceError } from '../errors.ts';

/*
 * A long-lived sync (follow mode) writes the target file it opened. When
 * the file at the target's path is deleted, or replaced by another one, its
 * connection would go on writing an unlinked inode (lost at close) or a file
 * nobody reads: the path's identity (device and inode) is compared with the
 * opened file's, and a difference stops the sync. It does not make the file
 * again by itself: whoever deleted it may not want it back.
 */

export interface FileIdentity {
  readonly dev: number;
  readonly ino: number;
}

/** The identity of the file at `file`, or undefined when there is none. */
export function fileIdentity(file: string): FileIdentity | undefined {
  try {
    const s = fs.statSync(file);
    return { dev: s.dev, ino: s.ino };
  } catch {
    return undefined;
  }
}

/** Throws TARGET_GONE when the file at `file` is not the one identified by `opened`. */
export function checkSameFile(file: string, opened: FileIdentity | undefined): void {
  const now = fileIdentity(file);
  if (opened === undefined || (now !== undefined && now.dev === opened.dev && now.ino === opened.ino)) return;
  const what = now === undefined ? 'was deleted' : 'was replaced by another file';
  throw new SluiceError(
    'TARGET_GONE',
    `Target ${file} ${what} while sync ran, so it stopped: it writes nothing more, neither to the old file nor to that path. Run sync again to rebuild the target from the source (or restore the file first).`,
  );
}
