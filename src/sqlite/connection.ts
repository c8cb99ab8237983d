import fs from 'node:fs';
import nodePath from 'node:path';
import Database from 'better-sqlite3';
import { SluiceError, InvalidInputError, errorCode } from '../errors.ts';
import { quoteIdent } from './quote.ts';
import { shellWord } from './shell-word.ts';
import { folderNotWritable } from './access.ts';
import { requireOutputPath } from './output-path.ts';
import { heldFile, pathIdentity, sameFile } from './file-identity.ts';
import type { Db } from './db.ts';

export type { Db } from './db.ts';

export interface OpenOptions {
  /** Open read-only (status, feed readers). Default false. */
  readonly readonly?: boolean;
  /** Create the file when it is missing (targets). Default false: a missing source is an error. */
  readonly create?: boolean;
  /** Milliseconds to wait on SQLITE_BUSY before failing. Default 5000. */
  readonly busyTimeoutMs?: number;
  /** What the file is, for error messages ("source", "target"). */
  readonly role?: string;
  /**
   * PRAGMA recursive_triggers. Default true: sluice's own connections need it
   * (so REPLACE fires delete triggers). `sluice query` turns it off, so a
   * user's SQL runs with SQLite's default, as the user's own triggers expect.
   */
  readonly recursiveTriggers?: boolean;
  /**
   * Switch the file to WAL (see useWal). Default false: opening a file never
   * changes its journal mode. For databases sluice creates or owns (targets).
   */
  readonly wal?: boolean;
}

interface JournalModeResult {
  /** The journal mode after the call, as SQLite reports it ('wal', 'delete', ...). */
  readonly journalMode: string;
  /** True when this call switched the file to WAL. */
  readonly switched: boolean;
}

/**
 * Opens a SQLite file with the pragmas sluice relies on: 64-bit integers as
 * bigint, a busy timeout, recursive triggers (so REPLACE fires delete
 * triggers). Opening writes nothing and keeps the file's journal mode;
 * `wal: true` (or useWal) switches it, for the files that should be in WAL.
 */
export function openDatabase(path: string, options: OpenOptions = {}): Db {
  // The identity of the file a connection holds is taken here, once (file-identity.ts): it is the
  // file the path named both before and after the open. A file swapped in meanwhile: open again.
  for (let attempt = 1; ; attempt++) {
    const before = path === ':memory:' ? undefined : pathIdentity(path);
    const db = openOnce(path, options);
    const after = heldFile(db);
    if (after === undefined ? before === undefined : before === undefined || sameFile(before, after)) return db;
    db.close();
    if (attempt === 3)
      throw new SluiceError(
        'DB_OPEN_FAILED',
        `Cannot open ${options.role ?? 'database'} ${path}: the file at that path was replaced by another one each time it was opened. Open it again once nothing renames files over it.`,
      );
  }
}

function openOnce(path: string, options: OpenOptions): Db {
  const role = options.role ?? 'database';
  if (path !== ':memory:') checkFile(path, role, options.create ?? false);
  let db: Db;
  try {
    db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: !(options.create ?? false) });
  } catch (cause) {
    throw (
      folderNotWritable(path, role, errorCode(cause)) ??
      noRoomToOpen(role, path, cause) ??
      new SluiceError('DB_OPEN_FAILED', `Cannot open ${role} ${path}: ${(cause as Error).message}. Check the path and its permissions.`, {
        cause,
      })
    );
  }
  try {
    db.defaultSafeIntegers(true);
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    db.pragma(`recursive_triggers = ${(options.recursiveTriggers ?? true) ? 'ON' : 'OFF'}`);
    if ((options.wal ?? false) && !(options.readonly ?? false) && path !== ':memory:') useWal(db);
    // Touch the schema so that a non-database file fails here, with our message.
    db.prepare('SELECT count(*) FROM main.sqlite_schema').get();
  } catch (cause) {
    db.close();
    if (errorCode(cause) === 'SQLITE_NOTADB') {
      throw new InvalidInputError('NOT_A_DATABASE', `${role} ${path} is not a SQLite database. Pass the path of a SQLite file.`, { cause });
    }
    if (errorCode(cause) === 'SQLITE_READONLY_ROLLBACK') throw hotJournal(role, path, cause);
    throw (
      folderNotWritable(path, role, errorCode(cause)) ??
      noRoomToOpen(role, path, cause) ??
      new SluiceError('DB_OPEN_FAILED', `Cannot use ${role} ${path}: ${(cause as Error).message}.`, { cause })
    );
  }
  return db;
}

/**
 * The error for database `path` that SQLite could not open or first read
 * because its disk is full (undefined for any other cause): SQLITE_FULL, or
 * SQLITE_IOERR_SHMSIZE, when the -shm it makes beside a WAL database (even
 * to read it) could not grow. SQLite names no file and says "disk I/O
 * error"; every command that opens a database, or attaches a target, says
 * it this one way.
 */
export function noRoomToOpen(role: string, path: string, cause: unknown): SluiceError | undefined {
  const code = errorCode(cause);
  if (code !== 'SQLITE_FULL' && code !== 'SQLITE_IOERR_SHMSIZE') return undefined;
  const folder = nodePath.dirname(nodePath.resolve(path));
  const what =
    code === 'SQLITE_FULL'
      ? `the disk that holds it (folder ${folder}) is full (SQLITE_FULL)`
      : `SQLite could not grow ${nodePath.basename(path)}-shm, which it makes beside a database in WAL mode to read or write it: the disk that holds it (folder ${folder}) is full, or a file size limit (ulimit -f) was reached (SQLITE_IOERR_SHMSIZE)`;
  return new SluiceError(
    'DB_OPEN_FAILED',
    `Cannot open ${role} ${path}: ${what}. Nothing was written. Free space on that disk, then run this again.`,
    {
      cause,
    },
  );
}

/**
 * The error for database `path` that a read-only connection cannot read
 * (SQLITE_READONLY_ROLLBACK): a hot journal beside it, which only a
 * connection with write access rolls back. The reader leaves it as it is.
 */
export function hotJournal(role: string, path: string, cause: unknown): SluiceError {
  return new SluiceError(
    'DB_OPEN_FAILED',
    `Cannot read ${role} ${path}: ${path}-journal is a hot journal, left by a process that stopped in the middle of a transaction, and a read-only reader may not roll it back. Open the file once with write access (your app, or sqlite3 ${shellWord(path)} 'PRAGMA schema_version;'), which rolls it back, then run this again.`,
    { cause },
  );
}

/**
 * Opens the bytes of a SQLite database as a read-only in-memory connection
 * of their own (sqlite3_deserialize: no file is made), with the same
 * pragmas as openDatabase. `label` names them in errors (a broker's
 * message); bytes SQLite cannot read throw NOT_A_DATABASE.
 */
export function openImage(bytes: Uint8Array, label: string): Db {
  let db: Db;
  try {
    db = new Database(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), { readonly: true });
  } catch (cause) {
    throw new InvalidInputError('NOT_A_DATABASE', `${label} is not a SQLite database (${(cause as Error).message}).`, { cause });
  }
  try {
    db.defaultSafeIntegers(true);
    db.prepare('SELECT count(*) FROM main.sqlite_schema').get();
  } catch (cause) {
    db.close();
    throw new InvalidInputError('NOT_A_DATABASE', `${label} is not a SQLite database SQLite can read (${(cause as Error).message}).`, {
      cause,
    });
  }
  return db;
}

/**
 * Switches one database of a connection to WAL, unless it is in WAL already
 * (a no-op then). WAL persists in the file: readers and one writer run side
 * by side, which follow mode and live sources rely on. When another
 * connection keeps it from switching, it stays in its mode (reported).
 */
export function useWal(db: Db, schema = 'main'): JournalModeResult {
  const read = () => String(db.pragma(`${quoteIdent(schema)}.journal_mode`, { simple: true }));
  const before = read();
  if (before === 'wal' || before === 'memory') return { journalMode: before, switched: false };
  try {
    db.pragma(`${quoteIdent(schema)}.journal_mode = WAL`);
  } catch {
    /* another connection holds it in rollback mode: it keeps its mode */
  }
  const after = read();
  return { journalMode: after, switched: after === 'wal' };
}

function checkFile(path: string, role: string, create: boolean): void {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(path);
  } catch {
    if (!create)
      throw new InvalidInputError(
        'DB_NOT_FOUND',
        `${role} ${path} does not exist. Check the path; sluice never creates a ${role} it was asked to read.`,
      );
    // A new file: not at a path ending in "/", nor in a folder that does not exist or through a file.
    requireOutputPath(path, { given: role, example: `${role}.db` });
    return;
  }
  if (!stat.isFile())
    throw new InvalidInputError('NOT_A_DATABASE', `${role} ${path} is not a file. Pass the path of a SQLite database file.`);
  // The header is not read here with fs: closing any descriptor of a database
  // file drops every POSIX lock this process holds on it, including those of
  // its open SQLite connections. Another process's connection (the sqlite3
  // CLI, Python) then takes itself for the last one on close and deletes the
  // WAL under them (SQLITE_IOERR, or worse). openDatabase lets SQLite read the
  // header instead and maps SQLITE_NOTADB to NOT_A_DATABASE, writing nothing.
}
