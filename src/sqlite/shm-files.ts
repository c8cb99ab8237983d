import fs from 'node:fs';
import path from 'node:path';

/*
 * The `-shm` files sluice reads itself (wal-frames.ts: the wal-index
 * header), each opened once and kept open.
 *
 * Closing a file descriptor releases every POSIX advisory lock the whole
 * process holds on that file, whichever descriptor took it
 * (https://sqlite.org/howtocorrupt.html, section 2.2): SQLite's own locks
 * on `-shm` included, those of this thread's connections and of every
 * other thread's. With them gone, the next process to open the database
 * finds no one holding the wal-index and starts it again: it truncates
 * `-shm` under this process's mapping of it. `sluice run` died of that
 * with SIGBUS when a target's follower stopped (a reload) while a test,
 * as any other reader would, opened the source.
 *
 * So a `-shm` descriptor is closed only once its file is no longer the one
 * at its path (replaced or removed: SQLite removes it only when no
 * connection of any process, this one included, holds it). Every look
 * that opens one closes those (sweep), so a process that reads many
 * databases in turn (a library's sync() into targets it then deletes)
 * keeps one per file still there.
 *
 * `sluice run`'s target threads own none: Node would close a thread's
 * descriptors when it ends (its threads run with trackUnmanagedFds off),
 * and a thread may end at any point (a handler that exits, a failure). The
 * main thread lends each new thread the descriptors it holds for the
 * thread's databases (lendShmFiles), and a thread gives the main thread
 * each descriptor it opens, at once (ownShmFilesIn): the main thread owns
 * them all, and closes them when its sweep finds them replaced.
 *
 * Not on Windows: there a lock belongs to the handle that took it, so
 * closing ours releases nothing of SQLite's, and a handle kept open would
 * keep a `-shm` SQLite removed from being made again (a file removed while
 * open stays "delete pending"). A reader there holds its own descriptor
 * and closes it (ShmReader.close).
 */

/** A `-shm` file held open: its path, its descriptor, and the file it is (device and inode). */
export interface HeldShm {
  readonly file: string;
  readonly fd: number;
  readonly id: string;
}

/** This thread's descriptors; `owned`: this thread closes it once stale (else another thread owns it). */
const held: (HeldShm & { readonly owned: boolean })[] = [];

/** Set in a thread whose descriptors another thread owns: told of each one it opens. */
let giveAway: ((h: HeldShm) => void) | undefined;

/** The `-shm` file of database `dbFile`, as this module keys it. */
function shmPath(dbFile: string): string {
  return `${path.resolve(dbFile)}-shm`;
}

/** Device and inode, or undefined when nothing is at `file`. */
function identity(file: string): string | undefined {
  const s = fs.statSync(file, { bigint: true, throwIfNoEntry: false });
  return s === undefined ? undefined : `${s.dev}:${s.ino}`;
}

/** The file (device and inode) descriptor `fd` is open on, or undefined when it is not open. */
function descriptorOf(fd: number): string | undefined {
  try {
    const s = fs.fstatSync(fd, { bigint: true });
    return `${s.dev}:${s.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * Forgets every descriptor whose file is no longer the one at its path,
 * closing those this thread owns: only while the descriptor is still on
 * that file (a number reused since must not close another file's).
 */
function sweep(): void {
  for (let i = held.length - 1; i >= 0; i--) {
    const h = held[i] as (typeof held)[number];
    if (identity(h.file) === h.id) continue;
    held.splice(i, 1);
    if (h.owned && descriptorOf(h.fd) === h.id) fs.closeSync(h.fd);
  }
}

/**
 * A descriptor of database `dbFile`'s `-shm`, opened read-only once and
 * kept (never close it); undefined when there is none (not in WAL mode, or
 * no connection has opened it since its last connection closed).
 */
function shmDescriptor(dbFile: string): number | undefined {
  const file = shmPath(dbFile);
  const now = identity(file);
  const h = held.find((x) => x.file === file && x.id === now);
  if (h !== undefined) return h.fd;
  sweep();
  if (now === undefined) return undefined;
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return undefined; // removed since the look
  }
  const opened = { file, fd, id: descriptorOf(fd) as string };
  held.push({ ...opened, owned: giveAway === undefined });
  giveAway?.(opened);
  return fd;
}

/** Whether `-shm` descriptors are kept (POSIX locks), or closed by their reader (Windows). */
const KEEP = process.platform !== 'win32';

/**
 * One reader's access to database `dbFile`'s `-shm`: a descriptor kept
 * for the file (POSIX), or one of its own that close() closes (Windows).
 */
export class ShmReader {
  readonly #db: string;
  #own: number | undefined;

  constructor(dbFile: string) {
    this.#db = dbFile;
  }

  /** A descriptor of `-shm` to read (never close it), or undefined when there is none. */
  descriptor(): number | undefined {
    if (KEEP) return shmDescriptor(this.#db);
    if (this.#own === undefined) {
      try {
        this.#own = fs.openSync(shmPath(this.#db), 'r');
      } catch {
        return undefined;
      }
    }
    return this.#own;
  }

  close(): void {
    if (KEEP) sweep();
    if (this.#own !== undefined) fs.closeSync(this.#own);
    this.#own = undefined;
  }
}

/**
 * For a thread another thread owns the descriptors of: takes `lent` (used,
 * never closed), and from now on tells `give` of each descriptor it opens,
 * which it leaves to that thread to close.
 */
export function ownShmFilesIn(lent: readonly HeldShm[], give: (h: HeldShm) => void): void {
  giveAway = give;
  for (const h of lent) if (!held.some((x) => x.fd === h.fd)) held.push({ ...h, owned: false });
}

/** Takes `files`, given by a thread that opened them, as this thread's to close once stale. */
export function adoptShmFiles(files: readonly HeldShm[]): void {
  for (const f of files) if (!held.some((x) => x.fd === f.fd)) held.push({ ...f, owned: true });
  sweep();
}

/** The descriptors this thread holds for these databases, current ones only: lent to a thread about to start on them. */
export function lendShmFiles(dbFiles: readonly string[]): HeldShm[] {
  sweep();
  const files = new Set(dbFiles.map(shmPath));
  return held.filter((h) => files.has(h.file)).map(({ file, fd, id }) => ({ file, fd, id }));
}
