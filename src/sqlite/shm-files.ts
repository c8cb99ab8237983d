import fs from 'node:fs';
import path from 'node:path';

/*
 * The `-shm` files sluice reads itself (wal-frames.ts: the wal-index
 * header), each opened once per thread and kept open.
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
 * So a `-shm` is never closed while it is the file at its path. One that
 * was replaced (its database's last connection anywhere removed it, and a
 * later one made it again) is closed at the next look: SQLite removes it
 * only once no connection of any process, this one included, holds it. A
 * thread that ends hands its files to the thread that started it
 * (handOverShmFiles, adoptShmFiles), which passes them on to the next
 * thread it starts for the same files, instead of leaving one descriptor
 * open per thread ever started.
 *
 * Not on Windows: there a lock belongs to the handle that took it, so
 * closing ours releases nothing of SQLite's, and a handle kept open would
 * keep a `-shm` SQLite removed from being made again (a file removed while
 * open stays "delete pending"). A reader there holds its own descriptor
 * and closes it (ShmReader.close).
 */

/** A `-shm` file this thread holds open: its path, its descriptor, and the file it is (device and inode). */
export interface HeldShm {
  readonly file: string;
  readonly fd: number;
  readonly id: string;
}

const held = new Map<string, HeldShm>();

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
 * A descriptor of database `dbFile`'s `-shm`, opened read-only once and
 * kept (never close it); undefined when there is none (not in WAL mode, or
 * no connection has opened it since its last connection closed).
 */
function shmDescriptor(dbFile: string): number | undefined {
  const file = shmPath(dbFile);
  const now = identity(file);
  const h = held.get(file);
  if (h !== undefined && h.id === now) return h.fd;
  if (h !== undefined) {
    // Replaced or removed: SQLite does that only once no connection holds it, so no lock of ours is on it. Closed
    // only while the descriptor is still that file's (a thread ended by Node with its descriptors closed, whose
    // numbers were reused since, must not close another file's).
    held.delete(file);
    if (descriptorOf(h.fd) === h.id) fs.closeSync(h.fd);
  }
  if (now === undefined) return undefined;
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return undefined; // removed since the look
  }
  held.set(file, { file, fd, id: descriptorOf(fd) as string });
  return fd;
}

/** Whether `-shm` descriptors are kept for the process's life (POSIX locks), or closed by their reader (Windows). */
const KEEP = process.platform !== 'win32';

/**
 * One reader's access to database `dbFile`'s `-shm`: the descriptor this
 * thread keeps (POSIX), or one of its own that close() closes (Windows).
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
    if (this.#own !== undefined) fs.closeSync(this.#own);
    this.#own = undefined;
  }
}

/** For a thread that ends: the `-shm` files it holds, now its parent's to keep (this thread forgets them). */
export function handOverShmFiles(): HeldShm[] {
  const all = [...held.values()];
  held.clear();
  return all;
}

/**
 * Takes `files` (handed over by a thread that ended, or passed to this
 * one when it started) as this thread's: kept open, and used for their
 * databases. One this thread holds already is kept as well (never closed).
 */
export function adoptShmFiles(files: readonly HeldShm[]): void {
  for (const f of files) if (!held.has(f.file)) held.set(f.file, f);
}

/** For a thread about to start on these databases: the `-shm` files this one holds for them, now the new thread's to keep. */
export function passShmFiles(dbFiles: readonly string[]): HeldShm[] {
  const out: HeldShm[] = [];
  for (const db of dbFiles) {
    const h = held.get(shmPath(db));
    if (h === undefined) continue;
    held.delete(h.file);
    out.push(h);
  }
  return out;
}
