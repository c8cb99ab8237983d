import fs from 'node:fs';
import path from 'node:path';
import { errorCode } from '../errors.ts';
import { openDatabase } from './connection.ts';
import type { Db } from './db.ts';

/*
 * A command that only reads databases (plan, health, explain, verify,
 * status, changes, export, strip, a read by query, alter's forecast of a
 * target) reads them, and a dry run (sluice alter --dry-run) opens its
 * files with write access and writes nothing it keeps: each must leave no
 * trace, `-wal`, `-shm` and `-journal` included. Three things SQLite does on its own would leave one:
 * - A read-only connection to a WAL file that no other connection has open
 *   makes an empty `-wal` and `-shm` beside it, and cannot remove them when
 *   it closes (only a connection that can take the write lock checkpoints
 *   and removes them).
 * - A connection with write access that is the last to close a WAL file
 *   checkpoints its `-wal` into the file and removes the `-wal` and `-shm`,
 *   those a killed program left included.
 * - A connection with write access that reads a file with a hot journal
 *   beside it (a program killed in the middle of a transaction) rolls that
 *   transaction back into the file and removes the `-journal`.
 * So, while `fn` runs, each file is held by a connection of its own that
 * never writes, opened before any other and closed after them all:
 * - A file with nothing beside it is held with write access: the others
 *   share its `-shm`, and when it closes last (as the last connection of a
 *   WAL file does) SQLite removes the `-wal` and `-shm` it made,
 *   checkpointing nothing, since nothing was committed. The file is not
 *   written.
 * - A file with a `-wal` or a `-journal` beside it (another process has it
 *   open or is in a transaction, or one was killed so) is held read-only:
 *   a connection of `fn` with write access is then never the last to close
 *   it, so the `-wal` stays as it is, not this process's to checkpoint or
 *   remove (SQLite's readers may still update the `-shm`, its shared
 *   memory). A hot journal keeps even a read-only holder out (SQLite
 *   refuses it with SQLITE_READONLY_ROLLBACK): readers are refused too and
 *   say so, but a connection with write access would roll it back, so
 *   holdQuietly refuses to run `fn` at all.
 * A file that cannot be opened for writing (read-only, or its folder) is
 * read without a holder: its readers may leave the two files.
 */

/** A file that `fn` opens, and what it is to the user (source, target) for the errors that name it. */
export interface QuietFile {
  readonly path: string;
  readonly role: string;
}

/**
 * The files held while a command reads them (see above), each from before
 * the command's first connection to it until after its last: add(file)
 * before opening `file`, close() once every connection to them is closed.
 * A command that learns which files it reads as it reads (health: a
 * target's sources; status: a source's targets) adds each as it goes.
 */
export class QuietHold {
  readonly #holders: Db[] = [];
  readonly #seen = new Set<string>();
  readonly #refuseHotJournal: boolean;

  /** `refuseHotJournal`: a file with a hot journal beside it is refused (holdQuietly), not left to the readers to refuse. */
  constructor(refuseHotJournal = false) {
    this.#refuseHotJournal = refuseHotJournal;
  }

  /** Holds `file` (a path: role 'database'), unless it is held already or does not exist; call it before opening the file. */
  add(file: string | QuietFile): void {
    const f = typeof file === 'string' ? { path: file, role: 'database' } : file;
    const key = path.resolve(f.path);
    if (this.#seen.has(key) || !fs.existsSync(f.path)) return;
    this.#seen.add(key);
    const db = holder(f, this.#refuseHotJournal);
    if (db !== undefined) this.#holders.push(db);
  }

  /** Lets every file go, the last held first. */
  close(): void {
    for (const db of this.#holders.splice(0).reverse()) db.close();
  }
}

/**
 * Runs `fn`, which only reads, with every file of `files` that exists held
 * so that reading it leaves nothing behind; `fn` adds to `hold` any other
 * file it opens, before it opens it.
 */
export async function readQuietly<T>(files: readonly string[], fn: (hold: QuietHold) => T | Promise<T>): Promise<T> {
  const hold = holding(files, false);
  try {
    return await fn(hold);
  } finally {
    hold.close();
  }
}

/** readQuietly for a reader that does not wait. */
export function readQuietlySync<T>(files: readonly string[], fn: (hold: QuietHold) => T): T {
  const hold = holding(files, false);
  try {
    return fn(hold);
  } finally {
    hold.close();
  }
}

/**
 * Runs `fn`, which opens `files` with write access and commits nothing to
 * them (a dry run), with every one of them that exists held as readQuietly
 * holds it, so that nothing is left behind. A file with a hot journal
 * beside it, which a connection with write access would roll back, is
 * refused before `fn` runs: DB_OPEN_FAILED naming its `-journal` and the
 * fix, as every read-only reader says it (hotJournal).
 */
export async function holdQuietly<T>(files: readonly QuietFile[], fn: () => T | Promise<T>): Promise<T> {
  const hold = holding(files, true);
  try {
    return await fn();
  } finally {
    hold.close();
  }
}

/** A hold of `files`, every one of them held (none left held when one is refused). */
function holding(files: readonly (string | QuietFile)[], refuseHotJournal: boolean): QuietHold {
  const hold = new QuietHold(refuseHotJournal);
  try {
    for (const file of files) hold.add(file);
  } catch (err) {
    hold.close();
    throw err;
  }
  return hold;
}

/** The connection that holds `file` (see above); undefined when none can (`fn` reports what is wrong), but a hot journal when `refuseHotJournal`. */
function holder(file: QuietFile, refuseHotJournal: boolean): Db | undefined {
  // A -wal or a -journal beside the file: not this process's to checkpoint, remove or roll back.
  const beside = fs.existsSync(`${file.path}-wal`) || fs.existsSync(`${file.path}-journal`);
  try {
    // openDatabase reads the schema: the WAL (when the file is in WAL mode) is open before any connection of `fn`.
    return openDatabase(file.path, { role: file.role, readonly: beside });
  } catch (err) {
    // openDatabase's error for it names the file as `file.role`, its -journal and the fix (hotJournal).
    if (refuseHotJournal && errorCode((err as { cause?: unknown }).cause) === 'SQLITE_READONLY_ROLLBACK') throw err;
    /* not writable, or not a database: `fn` reports what is wrong */
    return undefined;
  }
}
