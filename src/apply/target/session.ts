import fs from 'node:fs';
import {
  openDatabase,
  useWal,
  type Db,
  closeDatabase,
  requireWriteAccess,
  useCatchUpCaches,
  catchUpCacheSizes,
  sameDatabaseFile,
  shellWord,
} from '../../sqlite/index.ts';
import { InvalidInputError, isSqliteBusy, refuseEmptyPath } from '../../errors.ts';
import { hasCapture, openSource, refuseTarget, STATE_TABLE, targetTables, unreadableCapture, verifyCapture } from '../../capture/index.ts';
import { ensureTargetMeta } from './target-meta.ts';
import { guardProjectionTables } from './projection-writes.ts';
import { allowProjectionWrites } from './allow-writes.ts';
import { DEFAULT_BUSY_TIMEOUT_MS, markBusy } from './retry.ts';
import { attachTarget, notADatabase, TARGET_SCHEMA } from './attach.ts';

export { TARGET_SCHEMA } from './attach.ts';

/** Most of each database mapped into memory by the apply session (see openApplySession). */
const MMAP_BYTES = 256 * 1024 * 1024;

/**
 * One connection that reads the source (main) and writes the target
 * (attached as `tgt`). A transaction on it reads one source snapshot and
 * commits target rows and cursor together. Deferred transactions only: an
 * IMMEDIATE one would take the source's write lock too.
 */
export interface ApplySession {
  readonly db: Db;
  readonly sourcePath: string;
  readonly targetPath: string;
  /**
   * Catch-up mode (`on`): reads both databases through a memory map, with
   * the large page caches of a catch-up (src/sqlite/catch-up-caches.ts); off:
   * with read() calls and SQLite's default caches, which frees the pages
   * cached beyond them. Call between transactions. A session starts on. See
   * openApplySession.
   */
  memoryMap(on: boolean): void;
  close(): void;
}

interface ApplySessionOptions {
  /**
   * Only read both files (verify): the source and the target are opened
   * read-only, the target keeps its journal mode and gets no metadata
   * tables. Default false (sync: makes the target a WAL sluice target). The
   * session never re-arms the source: the Syncer does, once its
   * definitions are accepted, and reports it. `'target'`: the target is
   * only read as with true, and the source is opened for writing (sluice
   * alter --target runs the DDL on this connection and forecasts from the
   * target in the same transaction).
   */
  readonly readonly?: boolean | 'target';
  /** Milliseconds SQLite waits for another process's lock on either file (busy_timeout). Default DEFAULT_BUSY_TIMEOUT_MS. */
  readonly busyTimeoutMs?: number;
  /**
   * The caller's command with a given source and target (`sluice verify
   * SRC TGT`): what TARGET_IS_SOURCE names, the two in the right order, when
   * they look swapped (the source given is a sluice target). Default: the
   * two named in their places.
   */
  readonly command?: (source: string, target: string) => string;
  /**
   * Most bytes the target may grow to (PRAGMA max_page_count, set on this
   * connection: it holds for this session only). A write past it fails with
   * SQLITE_FULL, as on a full disk. Default: no limit but SQLite's own.
   */
  readonly maxTargetBytes?: number;
}

/** openSource; a source another process holds locked past the busy timeout throws its SQLITE_BUSY, marked as the source's (retryBusy names it). */
function openSourceOrBusy(sourcePath: string, readonly: boolean, busyTimeoutMs: number): Db {
  try {
    return openSource(sourcePath, { readonly, busyTimeoutMs });
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    if (!isSqliteBusy(cause)) throw err;
    markBusy(cause, 'source');
    throw cause;
  }
}

/**
 * TARGET_IS_SOURCE for a target that has capture enabled. When the source
 * given is a sluice target, the two look swapped: the fix is the command
 * with them in the right order, never taking capture off the file that is
 * the real source (its journal would go, and every reader rebuild).
 */
function targetIsSource(db: Db, sourcePath: string, targetPath: string, command: ApplySessionOptions['command']): InvalidInputError {
  const meta = targetTables(db);
  if (meta.length === 0)
    return new InvalidInputError(
      'TARGET_IS_SOURCE',
      `The target ${targetPath} has sluice capture enabled: it is a source. Use a separate database for projections (or disable capture there first).`,
    );
  const inOrder =
    command === undefined
      ? `give ${shellWord(targetPath)} as the source and ${shellWord(sourcePath)} as the target`
      : command(targetPath, sourcePath);
  return new InvalidInputError(
    'TARGET_IS_SOURCE',
    `The source and target look swapped: ${sourcePath}, given as the source, is a sluice target (it holds ${meta.join(' and ')}), and ${targetPath}, given as the target, is a source with capture enabled. Give the source first: ${inOrder}.`,
  );
}

export function openApplySession(sourcePath: string, targetPath: string, options: ApplySessionOptions = {}): ApplySession {
  const readonly = options.readonly !== undefined && options.readonly !== false;
  const readonlySource = options.readonly === true;
  refuseEmptyPath(sourcePath, 'source');
  refuseEmptyPath(targetPath, 'target');
  // Before the target is made: a source sync cannot write leaves no target behind.
  if (!readonly)
    requireWriteAccess(
      sourcePath,
      'source',
      'sync from',
      'sync writes to the source: it re-arms capture triggers that were dropped or altered, and records how far each target has read (_sluice_consumers)',
    );
  if (sameDatabaseFile(sourcePath, targetPath)) {
    throw new InvalidInputError(
      'TARGET_IS_SOURCE',
      `The target ${targetPath} is the source itself. Write projections into a separate database file.`,
    );
  }
  // Not a header read with fs (see openDatabase's checkFile): ATTACH below refuses a non-database with SQLITE_NOTADB, writing nothing.
  if (fs.existsSync(targetPath) && !fs.statSync(targetPath).isFile()) throw notADatabase(targetPath);
  const db = openSourceOrBusy(sourcePath, readonlySource, options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS);
  // A sync target given as the source (it has no capture: enable refuses a target): said as enable says it, with
  // the caller's command on the file it is synced from, not an enable of the target that enable refuses.
  const notTarget = (): void => {
    if (hasCapture(db)) return;
    const command = options.command ?? ((source: string) => `give ${shellWord(source)} as the source`);
    refuseTarget(db, sourcePath, { does: 'Run it from', command: (source) => command(source, targetPath) });
  };
  try {
    if (!fs.existsSync(targetPath)) {
      notTarget();
      // Before the target is made: a source whose capture cannot be read (none, an unknown format) leaves no target behind.
      const problem = verifyCapture(db).problem;
      if (problem !== undefined) throw unreadableCapture(db, problem);
      // ATTACH inherits the source connection's open flags (no CREATE), so make the file first.
      openDatabase(targetPath, { create: true, role: 'target' }).close();
    }
    db.pragma('temp_store = MEMORY');
    // A read-only session (verify, explain) may not roll back a hot journal of the target: attachTarget says which file, and the fix.
    attachTarget(db, targetPath);
    // A custom handler's statement that writes another projection's table is refused (CUSTOM_WROTE_PROJECTION): which tables those are.
    guardProjectionTables(db);
    if (db.prepare(`SELECT 1 FROM ${TARGET_SCHEMA}.sqlite_schema WHERE type = 'table' AND name = ?`).get(STATE_TABLE) !== undefined)
      throw targetIsSource(db, sourcePath, targetPath, options.command);
    notTarget();
    if (!readonly) {
      // A target is sluice's own file: WAL, so readers see it while follow mode writes.
      useWal(db, TARGET_SCHEMA);
      ensureTargetMeta(db, TARGET_SCHEMA);
      allowProjectionWrites(db); // a protected target's projections (protect.ts)
    }
    if (options.maxTargetBytes !== undefined) {
      const pageSize = Number(db.pragma(`${TARGET_SCHEMA}.page_size`, { simple: true }));
      // Never below the pages the file has (SQLite keeps it at least that): it cannot grow then.
      db.pragma(`${TARGET_SCHEMA}.max_page_count = ${Math.max(1, Math.floor(options.maxTargetBytes / pageSize))}`);
    }
    // Catch-up throughput (bench/apply.ts); this connection writes the source only for its acknowledgements.
    useCatchUpCaches(db, TARGET_SCHEMA, { checkpoint: !readonly });
  } catch (err) {
    closeDatabase(db);
    throw err;
  }
  // The set-based apply reads journal rows and target rows by key, one
  // B-tree seek each; through a memory map a seek reads the OS page cache in
  // place instead of copying each page in with a read() call (about 1.4x
  // faster catch-up, bench/apply.ts). But SQLite drops the whole map when a
  // read transaction finds that another connection committed, so a follower
  // that applies a small batch per source commit would map again and fault
  // its pages in for every batch (about 160 µs each, more than the reads
  // it saves): the Syncer maps only while it catches up. In WAL mode (the
  // target always, the source since enable) a checkpoint never shrinks a
  // file under a reader's snapshot; a source a user put back in rollback
  // mode cannot change at all while the read transaction holds its SHARED
  // lock. Not on Windows: there a mapped file cannot be truncated, which
  // would make another process's VACUUM of the source fail.
  // The caches follow the same rule: large while catching up, the default while following (catch-up-caches.ts).
  let mapped = false;
  let cachesOn = true; // useCatchUpCaches above
  const memoryMap = (on: boolean) => {
    if (on !== cachesOn) {
      catchUpCacheSizes(db, TARGET_SCHEMA, on);
      cachesOn = on;
    }
    if (on === mapped || process.platform === 'win32') return;
    const bytes = on ? MMAP_BYTES : 0;
    db.pragma(`main.mmap_size = ${bytes}`);
    db.pragma(`${TARGET_SCHEMA}.mmap_size = ${bytes}`);
    mapped = on;
  };
  try {
    memoryMap(true);
  } catch (err) {
    closeDatabase(db);
    throw err;
  }
  return {
    db,
    sourcePath,
    targetPath,
    memoryMap,
    close() {
      closeDatabase(db);
    },
  };
}
