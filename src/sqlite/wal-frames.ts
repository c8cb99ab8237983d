import fs from 'node:fs';
import { ShmReader } from './shm-files.ts';

/*
 * What SQLite's write-ahead log says about the commits in it, read from the
 * files (https://sqlite.org/walformat.html), for a reader that wants to know
 * which pages other connections wrote: the end of the log from the
 * wal-index header in `-shm`, and for each frame of `-wal` its page number
 * and whether it ends a commit (its "database size after commit" field).
 *
 * A frame is only read while a read transaction of the caller's holds the
 * log from being started again past it (see apply/edits/target-watch.ts): SQLite
 * writes a frame once and never changes it until it starts the log again
 * (a "restart", which changes the salts in the header and in every frame
 * written after it).
 */

/** Where the log ends: its last committed frame, in the log whose header carries `salt`. */
export interface WalEnd {
  /** The two salts of the log's header, as hex: a new value means the log was started again. */
  readonly salt: string;
  /** The last committed frame (mxFrame; 0 for an empty log). */
  readonly frame: number;
  /** Frames copied into the database file so far (nBackfill): equal to `frame` when a checkpoint completed. */
  readonly backfilled: number;
}

/** One commit of the log: the pages it wrote, and the database's size in pages after it. */
export interface WalCommit {
  readonly pages: ReadonlySet<number>;
  readonly dbPages: number;
}

const WAL_HEADER = 32;
const FRAME_HEADER = 24;
const INDEX_HEADER = 48;

/**
 * Open files of one database's log, read without locks (the reader's
 * pinned read transaction keeps what it reads in place). Closed with
 * close(); `-wal` is opened for each read, and `-shm` stays open on POSIX
 * systems (shm-files.ts: closing it would release SQLite's locks on it).
 */
export class WalFiles {
  readonly #db: string;
  readonly #shm: ShmReader;
  readonly #header = Buffer.alloc(WAL_HEADER);
  readonly #index = Buffer.alloc(INDEX_HEADER * 2 + 4);
  readonly #frame = Buffer.alloc(8);
  readonly #next = Buffer.alloc(FRAME_HEADER);

  constructor(dbFile: string) {
    this.#db = dbFile;
    this.#shm = new ShmReader(dbFile);
  }

  /**
   * The end of the log as the wal-index header says, or undefined when it
   * cannot be read (no `-shm`: the file is not in WAL mode, or a writer is
   * halfway through updating the header, whose two copies then differ).
   */
  end(): WalEnd | undefined {
    const fd = this.#shm.descriptor();
    if (fd === undefined) return undefined;
    const b = this.#index;
    // A writer updates the second copy, then the first: they differ only for that moment.
    for (let tries = 0; tries < 100; tries++) {
      if (fs.readSync(fd, b, 0, b.length, 0) < b.length) return undefined;
      if (b[12] !== 1) return undefined; // isInit: no connection has read the log yet
      if (!b.subarray(0, INDEX_HEADER).equals(b.subarray(INDEX_HEADER, INDEX_HEADER * 2))) continue;
      // Native byte order, as SQLite maps it; the salts are the WAL header's bytes copied as they are.
      const u32 = (at: number) => (LITTLE_ENDIAN ? b.readUInt32LE(at) : b.readUInt32BE(at));
      return { salt: b.subarray(32, 40).toString('hex'), frame: u32(16), backfilled: u32(INDEX_HEADER * 2) };
    }
    return undefined;
  }

  /**
   * The commits of frames (from, to] of the log whose header carries
   * `salt`, in order; undefined when the log on disk is not that log (it was
   * started again) or a frame in the range is not of it.
   */
  commits(salt: string, from: number, to: number): WalCommit[] | undefined {
    if (to <= from) return [];
    return this.#withWal((fd) => this.#commits(fd, salt, from, to));
  }

  #commits(fd: number, salt: string, from: number, to: number): WalCommit[] | undefined {
    const h = this.#header;
    if (fs.readSync(fd, h, 0, WAL_HEADER, 0) < WAL_HEADER) return undefined;
    if (h.subarray(16, 24).toString('hex') !== salt) return undefined;
    const pageSize = h.readUInt32BE(8) === 1 ? 65536 : h.readUInt32BE(8);
    const saltBytes = h.subarray(16, 24);
    const salted = Buffer.alloc(8);
    const out: WalCommit[] = [];
    let pages = new Set<number>();
    for (let i = from + 1; i <= to; i++) {
      const at = WAL_HEADER + (i - 1) * (FRAME_HEADER + pageSize);
      if (fs.readSync(fd, this.#frame, 0, 8, at) < 8 || fs.readSync(fd, salted, 0, 8, at + 8) < 8) return undefined;
      if (!salted.equals(saltBytes)) return undefined;
      pages.add(this.#frame.readUInt32BE(0));
      const size = this.#frame.readUInt32BE(4);
      if (size !== 0) {
        out.push({ pages, dbPages: size });
        pages = new Set<number>();
      }
    }
    // `to` is a committed frame, so the last one ends a commit.
    return pages.size === 0 ? out : undefined;
  }

  /**
   * Whether the log holds a frame written after its last commit: a commit
   * under way (its frames are written before the wal-index header publishes
   * them), or, rarely, what a rolled-back one left. False when the frame
   * after the last commit is absent or of an earlier log (another salt);
   * undefined when it cannot be told (no `-shm`, a header being updated).
   * Read without locks, as a hint: a follower woken by a write to the log
   * waits for a commit to be published only when one is under way.
   */
  pending(): boolean | undefined {
    const end = this.end();
    if (end === undefined) return undefined;
    return this.#withWal((fd) => this.#pendingAfter(fd, end));
  }

  #pendingAfter(fd: number, end: WalEnd): boolean {
    const b = this.#index;
    const sz = LITTLE_ENDIAN ? b.readUInt16LE(14) : b.readUInt16BE(14);
    const pageSize = sz === 1 ? 65536 : sz;
    const at = WAL_HEADER + end.frame * (FRAME_HEADER + pageSize);
    const f = this.#next;
    if (fs.readSync(fd, f, 0, FRAME_HEADER, at) < FRAME_HEADER) return false;
    return f.subarray(8, 16).equals(b.subarray(32, 40));
  }

  /**
   * Runs `read` on `-wal`, opened for it and closed after: no descriptor is
   * left open between calls (a thread of sluice run that ends abruptly
   * leaves none behind; SQLite locks nothing in `-wal`, so closing it is
   * harmless). Undefined when there is no `-wal`.
   */
  #withWal<T>(read: (fd: number) => T): T | undefined {
    const fd = openIfThere(`${this.#db}-wal`);
    if (fd === undefined) return undefined;
    try {
      return read(fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  close(): void {
    this.#shm.close();
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function openIfThere(file: string): number | undefined {
  try {
    return fs.openSync(file, 'r');
  } catch {
    return undefined;
  }
}
