import {
  openDatabase,
  type Db,
  closeDatabase,
  cachedStatement,
  beginHeld,
  rollbackOpen,
  quoteIdent,
  WalFiles,
  type WalCommit,
  type WalEnd,
} from '../../sqlite/index.ts';
import { PROJECTIONS_TABLE } from '../target/index.ts';
import { DROPPED_TABLE, TARGET_INFO_TABLE } from '../../capture/index.ts';
import { PROJECTION_SET_TABLE } from '../projections/index.ts';
import { editEvidence } from './edit-evidence.ts';
import type { WatchedProjection, EditEvidence } from './edit-evidence.ts';
export type { WatchedProjection, EditEvidence } from './edit-evidence.ts';

/*
 * Which projections another program wrote, seen by a long-lived syncer
 * (sync --follow) at almost no cost while nobody does.
 *
 * - The apply connection's `PRAGMA data_version` of the target moves only
 *   when another connection committed to it: read at the start of each of
 *   sluice's target transactions (with the target's write lock held) and
 *   while idle, a few µs each. Unchanged: nothing else to do.
 * - When it moved, the target's write-ahead log says which pages each of
 *   those commits wrote (sqlite/wal-frames.ts), and edit-evidence.ts which
 *   projections they wrote, with page ownership read by dbstat on a
 *   connection reading the target as it was when the log ended there (and
 *   kept as a superset per projection, so that writes to a user's own
 *   tables need no dbstat walk at all).
 * - A log is only useful while SQLite keeps it: it starts the log again (a
 *   "restart") once a checkpoint has copied it all into the database file.
 *   So a connection of the watch always holds a read transaction ("the
 *   pin") at the point up to which the log has been read: no checkpoint can
 *   copy past a reader's snapshot, so the log cannot start again more than
 *   once past it, and what was written after it stays readable. The pin is
 *   moved with two connections, the new snapshot taken before the old one
 *   is let go, and taken only when the log's end did not move around it,
 *   so its position is exact without any lock. Because the pin holds
 *   checkpoints back, a log grown past CHECKPOINT_FRAMES is checkpointed by
 *   the watch itself, between sluice's transactions: pin at the end,
 *   checkpoint, pin again (then at "read lock 0", which lets the next
 *   writer start the log again).
 *
 * What it cannot place it says (`unsure`: the log could not be read, or
 * edit-evidence.ts's cases); the caller then compares the rows where it can.
 */

/** A log at least this many frames long is checkpointed by the watch between transactions (the apply session's autocheckpoint). */
const CHECKPOINT_FRAMES = 10_000;
/** A log within this many frames of CHECKPOINT_FRAMES has its length read after each transaction (between), not only every ADVANCE_MS. */
const NEAR_CHECKPOINT_FRAMES = 1000;
/** While nobody else writes, the pin is moved on at most this often (so checkpoints of sluice's own commits can go on). */
const ADVANCE_MS = 100;
/** The watch checkpoints a long log at most this often (another reader may keep a checkpoint from finishing). */
const CHECKPOINT_MS = 1000;
/** sluice's own commits since the pin are read from the log (to keep the page supersets) when they are at most this many frames. */
const OWN_FRAMES_READ = 2000;
/**
 * The tables only sluice writes: a commit that wrote one of their pages is a
 * sluice process's. Every sluice commit to a target writes one (a projection's
 * row, the projection set, a drop's record, or the target's info row,
 * which a check of pending edits updates): one that wrote none would pass for another
 * program's, and a projection changed by a sluice commit after it could not
 * be placed (compared with the source for nothing).
 */
const META_TABLES = [PROJECTIONS_TABLE, PROJECTION_SET_TABLE, TARGET_INFO_TABLE, DROPPED_TABLE].flatMap((t) => [
  t,
  `sqlite_autoindex_${t}_1`,
]);

export class TargetWatch {
  readonly #db: Db;
  readonly #schema: string;
  readonly #wal: WalFiles;
  /** The projections to watch and their tables, read on a connection to the target (as `main`). */
  readonly #watched: (snap: Db) => readonly WatchedProjection[];
  /** The connection holding the read transaction at `#at`, and the one the next pin is taken with. */
  #pin: Db;
  #spare: Db;
  #at: WalEnd;
  #dv: number;
  #advancedMs = Date.now();
  #checkpointedMs = 0;
  /** When between() last read the log's length (to checkpoint a long one), and whether it was close to CHECKPOINT_FRAMES. */
  #lengthSeenMs = 0;
  #nearCheckpoint = false;
  /** sluice committed to the target since the pin last moved (its own commits are not read from the log). */
  #wroteSincePin = false;
  readonly #pending = new Map<string, { tables: Set<string>; unsure: boolean }>();
  /** Per projection, a superset of the pages of its tables at `#at`, and the schema version they were read at. */
  readonly #pages = new Map<string, Set<number>>();
  #pagesSchema = -1;

  private constructor(
    db: Db,
    schema: string,
    wal: WalFiles,
    pin: Db,
    spare: Db,
    at: Pinned,
    watched: (snap: Db) => readonly WatchedProjection[],
  ) {
    this.#db = db;
    this.#schema = schema;
    this.#wal = wal;
    this.#pin = pin;
    this.#spare = spare;
    this.#at = at.end;
    this.#dv = at.dv;
    this.#watched = watched;
  }

  /**
   * Starts watching the target attached to `db` as `schema` (at `targetPath`):
   * from now on, commits of other connections are read. Undefined when the
   * target's log cannot be read (not in WAL mode), so nothing can be watched.
   */
  static open(db: Db, schema: string, targetPath: string, watched: (snap: Db) => readonly WatchedProjection[]): TargetWatch | undefined {
    const wal = new WalFiles(targetPath);
    const pins: Db[] = [];
    try {
      for (let i = 0; i < 2; i++) pins.push(openDatabase(targetPath, { role: 'target' }));
      const [pin, spare] = pins as [Db, Db];
      const at = pinAtEnd(wal, pin, () => dataVersion(db, schema));
      if (at === undefined) throw new Error('no log');
      return new TargetWatch(db, schema, wal, pin, spare, at, watched);
    } catch {
      for (const p of pins) closeDatabase(p);
      wal.close();
      return undefined;
    }
  }

  /**
   * Call in each of sluice's target write transactions, with the target's
   * write lock held and before anything is written: reads what other
   * connections committed since the last look.
   */
  locked(): void {
    const changed = dataVersion(this.#db, this.#schema) !== this.#dv;
    if (changed || Date.now() - this.#advancedMs >= ADVANCE_MS) this.#advance(changed);
    // This transaction may commit after the pin.
    this.#wroteSincePin = true;
  }

  /**
   * Call between sluice's transactions (after a step, while idle): reads
   * what other connections committed (when they did), and checkpoints a log
   * grown long. True when some projection has edits to look at.
   */
  between(): boolean {
    const foreign = dataVersion(this.#db, this.#schema) !== this.#dv;
    if (foreign) this.#advance(true);
    const now = Date.now();
    // The log's length is looked at as often as the pin moves, not after every
    // transaction (a follower makes one per source commit, of a few frames
    // each), unless it was close to CHECKPOINT_FRAMES at the last look: then
    // after each, so that the checkpoint comes as soon as it is due (each
    // commit past it tries one of its own, which the pin keeps from finishing).
    // And after another program's commit, which may have grown it by any amount.
    if (foreign || this.#nearCheckpoint || now - this.#lengthSeenMs >= ADVANCE_MS) {
      this.#lengthSeenMs = now;
      const end = this.#wal.end();
      this.#nearCheckpoint = end !== undefined && end.frame >= CHECKPOINT_FRAMES - NEAR_CHECKPOINT_FRAMES;
      if (
        end !== undefined &&
        end.frame >= CHECKPOINT_FRAMES &&
        end.backfilled < end.frame &&
        now - this.#checkpointedMs >= CHECKPOINT_MS
      ) {
        this.#checkpointedMs = now;
        this.#checkpoint();
        return this.#pending.size > 0;
      }
    }
    if (this.#wroteSincePin && now - this.#advancedMs >= ADVANCE_MS) this.#advance(false);
    return this.#pending.size > 0;
  }

  /** What another program wrote of projection `name`, if anything since it was last settled. */
  evidence(name: string): EditEvidence | undefined {
    const e = this.#pending.get(name);
    return e === undefined ? undefined : { tables: [...e.tables].sort(), unsure: e.unsure };
  }

  /** Forgets the evidence of `name` (it was checked, or the projection is suspended). */
  settle(name: string): void {
    this.#pending.delete(name);
  }

  close(): void {
    closeDatabase(this.#pin);
    closeDatabase(this.#spare);
    this.#wal.close();
  }

  /**
   * Pins the log's end with the spare connection; with `read`, first notes
   * what the commits since the old pin wrote. When the end cannot be pinned
   * exactly (commits kept landing), the old pin stays for the next try.
   */
  #advance(read: boolean): void {
    const pinned = pinAtEnd(this.#wal, this.#spare, () => dataVersion(this.#db, this.#schema));
    if (pinned === undefined) return;
    const { end, dv } = pinned;
    // The data_version read with the pin: unchanged, no other connection committed up to the pin, so what follows the old one is sluice's own.
    const foreign = dv !== this.#dv;
    this.#dv = dv;
    const since = end.salt === this.#at.salt ? end.frame - this.#at.frame : end.frame;
    if (read || foreign || (this.#pages.size > 0 && since <= OWN_FRAMES_READ)) this.#note(this.#commitsUpTo(end), this.#spare);
    else this.#pages.clear(); // sluice's own commits since the old pin are not read: the page supersets may be short
    rollbackOpen(this.#pin); // the old pin let go
    [this.#pin, this.#spare] = [this.#spare, this.#pin];
    this.#at = end;
    this.#advancedMs = Date.now();
    this.#wroteSincePin = false;
  }

  /**
   * Between sluice's transactions: every frame of the log copied into the
   * database file now, and the pin moved to where it holds none of it back
   * (#checkpoint), so that a TRUNCATE checkpoint after it can empty the
   * log: a scrubbed drop's (sqlite/scrub.ts), whose zeroed pages must reach
   * the file while the follower runs, not at its close.
   */
  letGoOfLog(): void {
    this.#checkpointedMs = Date.now();
    this.#checkpoint();
  }

  /**
   * The target's file was written under the watch by something other than a
   * commit (a checkpoint, or another file's contents copied over it: the
   * Syncer's checkTarget): the pages its connections cached and the page
   * sets it kept are dropped, and the pin moves on, reading the file as it
   * is now.
   */
  fileRewritten(): void {
    for (const c of [this.#pin, this.#spare]) c.exec('PRAGMA shrink_memory');
    this.#pages.clear();
    this.#advance(false);
  }

  /** Pin at the end, checkpoint everything up to it with the free connection, and pin again (then with the log all copied). */
  #checkpoint(): void {
    this.#advance(false);
    try {
      cachedStatement(this.#spare, 'PRAGMA main.wal_checkpoint(PASSIVE)').run();
    } catch {
      /* a checkpoint is housekeeping: the next one goes further */
    }
    this.#advance(false);
  }

  /** The commits after `#at` up to `end`: in the same log, or (it was started again once, which the pin allows) all of the new one. */
  #commitsUpTo(end: WalEnd): WalCommit[] | undefined {
    if (end.salt === this.#at.salt) return end.frame >= this.#at.frame ? this.#wal.commits(end.salt, this.#at.frame, end.frame) : undefined;
    return this.#wal.commits(end.salt, 0, end.frame);
  }

  /** Notes which projections other programs' commits wrote, with page ownership read on `snap` (the target at the log's end). */
  #note(commits: WalCommit[] | undefined, snap: Db): void {
    const watched = this.#watched(snap);
    if (commits === undefined) {
      for (const w of watched) this.#suspect(w.name, [], true);
      this.#pages.clear();
      return;
    }
    if (commits.length === 0) return;
    // A table made, dropped or renamed (a rebuild's swap) has pages no commit of it wrote since: list them all again.
    const schema = Number(cachedStatement(snap, 'PRAGMA main.schema_version', 'pluck').get());
    if (schema !== this.#pagesSchema) this.#pages.clear();
    this.#pagesSchema = schema;
    const found = editEvidence(commits, pagesOf(snap, META_TABLES), watched, this.#pages, (t) => pagesOf(snap, [t]));
    for (const [name, e] of found) this.#suspect(name, e.tables, e.unsure);
  }

  #suspect(name: string, tables: readonly string[], unsure: boolean): void {
    const e = this.#pending.get(name) ?? { tables: new Set<string>(), unsure: false };
    for (const t of tables) e.tables.add(t);
    e.unsure ||= unsure;
    this.#pending.set(name, e);
  }
}

/** A pin: the log's end its snapshot is at, and the apply connection's data_version of the target as of exactly there. */
interface Pinned {
  readonly end: WalEnd;
  readonly dv: number;
}

/**
 * Starts a read transaction on `conn` at the log's end and returns that end,
 * with `dataVersion()` read at the same point, when the end did not move
 * while both were taken (so the snapshot is exactly there, and the
 * data_version counts exactly the commits up to it); else none is held and
 * it returns undefined.
 */
function pinAtEnd(wal: WalFiles, conn: Db, dataVersion: () => number): Pinned | undefined {
  for (let tries = 0; tries < 3; tries++) {
    const before = wal.end();
    if (before === undefined) return undefined;
    beginHeld(conn, 'read');
    const dv = dataVersion();
    const after = wal.end();
    if (after !== undefined && after.salt === before.salt && after.frame === before.frame) return { end: before, dv };
    rollbackOpen(conn);
  }
  return undefined;
}

/** `PRAGMA data_version` of the database attached as `schema`: it moves only when another connection commits to it. */
function dataVersion(db: Db, schema: string): number {
  return Number(cachedStatement(db, `PRAGMA ${quoteIdent(schema)}.data_version`, 'pluck').get());
}

/**
 * The pages of the named tables (b-trees; a virtual table has none) in
 * `snap`'s main database. A name with no b-tree (a table not made on this
 * target, such as `_sluice_dropped` before the first drop) is skipped before
 * dbstat is asked: `dbstat WHERE name = NULL` is no constraint to it, and it
 * walks every page of the database to find that nothing matches.
 */
function pagesOf(snap: Db, tables: readonly string[]): Set<number> {
  const named = cachedStatement(
    snap,
    "SELECT name FROM main.sqlite_schema WHERE type IN ('table', 'index') AND name = ? COLLATE NOCASE",
    'pluck',
  );
  const stmt = cachedStatement(snap, 'SELECT pageno FROM main.dbstat WHERE name = ?', 'pluck');
  const out = new Set<number>();
  for (const t of tables) {
    const name = named.get(t) as string | undefined;
    if (name === undefined) continue;
    for (const p of stmt.all(name) as (number | bigint)[]) out.add(Number(p));
  }
  return out;
}
