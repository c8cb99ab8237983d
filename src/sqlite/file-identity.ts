import fs from 'node:fs';
import { SluiceError, errorCode } from '../errors.ts';
import type { Db } from './db.ts';
import { connectionState, slot } from './connection-state.ts';

/*
 * A connection holds the file it opened, whatever its path names later: a
 * file deleted, or replaced by a rename (`VACUUM INTO copy.db && mv copy.db
 * app.db`, the way people swap in a compacted file), stays open under it.
 * So the identity (device and inode) of what a connection reads is taken
 * once, when it is opened, never from the path afterwards; and a
 * long-lived reader or writer compares the path's identity with it, and
 * stops on a difference: a source's reader would otherwise go on reading a
 * file no writer reaches (and stamp cursors with the new file's identity),
 * a target's writer would write an unlinked inode (lost at close) or a file
 * nobody reads. Neither makes the file again by itself: whoever swapped or
 * deleted it may not want it back.
 */

export interface FileIdentity {
  /** Device and inode as decimal strings: Windows file ids exceed 2^53. */
  readonly dev: string;
  readonly ino: string;
  /** Birth time in ms where the OS reports one, else 0. */
  readonly birth: number;
}

/** The identity of the file at `file` now, or undefined when there is none. */
export function pathIdentity(file: string): FileIdentity | undefined {
  let st: fs.BigIntStats | undefined;
  try {
    st = fs.statSync(file, { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    // A file above the path (notes.txt/x.db): nothing is there either; openDatabase says why it cannot be made.
    if (errorCode(err) === 'ENOTDIR') return undefined;
    throw err;
  }
  return st === undefined ? undefined : { dev: st.dev.toString(), ino: st.ino.toString(), birth: Number(st.birthtimeMs) };
}

export function sameFile(a: FileIdentity, b: FileIdentity): boolean {
  // Birth time is compared only when both sides have one.
  return a.dev === b.dev && a.ino === b.ino && (a.birth === 0 || b.birth === 0 || a.birth === b.birth);
}

function isFile(db: Db): boolean {
  return !db.memory && db.name !== '' && db.name !== ':memory:';
}

// The first use of a connection opened by openDatabase is its open (it checks the path did not change meanwhile).
const held = slot('held-file', (db): { readonly file: FileIdentity | undefined } => ({
  file: isFile(db) ? pathIdentity(db.name) : undefined,
}));

/**
 * The identity of the database file `db` holds as main (undefined for an
 * in-memory one), taken once per connection: when openDatabase opened it,
 * or, for a connection opened elsewhere, on its first use here.
 */
export function heldFile(db: Db): FileIdentity | undefined {
  return connectionState(db).get(held).file;
}

/** The command that writes a target, for TARGET_GONE's wording: sync (from its source) or subscribe (from a broker's stream). */
export type TargetWriter = 'sync' | 'subscribe';

/** How the next run of `writer` makes the target again. */
const REBUILDS: Record<TargetWriter, string> = {
  sync: 'from the source',
  subscribe: "from the stream's snapshot",
};

/**
 * Throws when the file at `file` is not the one identified by `opened`
 * (taken when it was opened): SOURCE_REPLACED for a source, TARGET_GONE for
 * a target (written by `writer`). A no-op when nothing was identified (an
 * in-memory database).
 */
export function checkSameFile(
  file: string,
  opened: FileIdentity | undefined,
  role: 'source' | 'target',
  writer: TargetWriter = 'sync',
): void {
  if (opened === undefined || plainlySame(fs.statSync(file, { throwIfNoEntry: false }), opened)) return;
  notSameFile(file, opened, role, writer);
}

/**
 * checkSameFile, returning the file's stamp (fileStamp) from the same stat:
 * what a long-lived writer looks at before each batch costs one stat.
 */
export function checkSameFileStamp(
  file: string,
  opened: FileIdentity | undefined,
  role: 'source' | 'target',
  writer: TargetWriter = 'sync',
): string {
  const st = fs.statSync(file, { throwIfNoEntry: false });
  if (opened !== undefined && !plainlySame(st, opened)) notSameFile(file, opened, role, writer);
  return stampOf(st);
}

/** Throws as checkSameFile says, unless the exact comparison finds `file` is `opened` after all. */
function notSameFile(file: string, opened: FileIdentity, role: 'source' | 'target', writer: TargetWriter): void {
  const now = pathIdentity(file);
  if (now !== undefined && sameFile(now, opened)) return;
  const what = now === undefined ? 'was deleted' : 'was replaced by another file';
  if (role === 'target')
    throw new SluiceError(
      'TARGET_GONE',
      `Target ${file} ${what} while ${writer} ran, so it stopped: it writes nothing more, neither to the old file nor to that path. Run ${writer} again to rebuild the target ${REBUILDS[writer]} (or restore the file first).`,
    );
  throw new SluiceError(
    'SOURCE_REPLACED',
    `Source ${file} ${what} while sluice read it (a copy renamed over it, e.g. after VACUUM INTO), so it stopped: it read the file it had opened, which writers no longer reach through that path, and made no cursor for the new one. Run it again: a new run reads the file now at ${file}, and a cursor taken on the old one starts again from a snapshot (FILE_CHANGED).`,
  );
}

/*
 * checkSameFile runs before every batch of a follower, and the exact
 * identity (pathIdentity) costs a stat with a BigInt for each of its
 * fields, a good part of a follower's allocations per batch. So it first
 * looks with a plain stat: device and inode are exact while they are safe
 * integers, and the birth time in ms, made from seconds and nanoseconds in
 * floating point, is the exact one or, rounded up across a ms boundary, one
 * more. Equal to the opened file's exact one, it is that (a file made later
 * in the same inode is born no earlier). Any other answer (a path that
 * names nothing, ids past 2^53 as on Windows, another file, a birth rounded
 * up) goes to the exact comparison, which decides and words the error.
 */
function plainlySame(st: fs.Stats | undefined, opened: FileIdentity): boolean {
  if (st === undefined || !Number.isSafeInteger(st.dev) || !Number.isSafeInteger(st.ino)) return false;
  if (String(st.ino) !== opened.ino || String(st.dev) !== opened.dev) return false;
  const birth = Math.floor(st.birthtimeMs);
  return opened.birth === 0 || birth === 0 || birth === opened.birth;
}

/**
 * The file's inode, size and times, as one string: its contents written
 * without SQLite's knowledge (an older copy copied over it: cp bak.db app.db)
 * change it while moving no data_version for a connection that has it open,
 * and so do a checkpoint's writes. Empty when the path names nothing. One
 * stat.
 */
export function fileStamp(file: string): string {
  try {
    return stampOf(fs.statSync(file, { throwIfNoEntry: false }));
  } catch {
    return '';
  }
}

function stampOf(st: fs.Stats | undefined): string {
  return st === undefined ? '' : `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

/** checkSameFile for the file `db` holds as main (a source connection: SOURCE_REPLACED). */
export function checkHeldFile(db: Db, role: 'source' | 'target' = 'source'): void {
  if (isFile(db)) checkSameFile(db.name, heldFile(db), role);
}
