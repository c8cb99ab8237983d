import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { InvalidInputError } from '../errors.ts';
import { openDatabase, type Db } from './connection.ts';

/*
 * Reading a database without touching its folder. Even a read-only
 * connection to a WAL-mode file makes its -wal and -shm, and they outlive
 * it. A command that must leave every file as it found it (sluice init)
 * reads an in-memory copy of the file instead: while no -wal or -journal is
 * there, the main file holds every committed transaction. While one is
 * there with its -shm, another connection has the file open: a read-only
 * connection then creates nothing that is not there already, and reads what
 * that file holds too. A -wal with no -shm is a process that crashed with
 * nothing open on it now: SQLite cannot read the log without making its
 * -shm, so the file and its log are read from a copy in a folder of the
 * system's temporary ones (removed at once), as one image in memory.
 */

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * A read-only view of `file` that creates no file beside it; `role` names
 * it in errors (DB_NOT_FOUND, NOT_A_DATABASE as openDatabase's). Close it
 * when done.
 *
 * @example
 * const db = openUntouched('app.db', 'database'); // no app.db-wal, no app.db-shm
 */
export function openUntouched(file: string, role: string): Db {
  if (fs.existsSync(`${file}-wal`) && !fs.existsSync(`${file}-shm`) && !fs.existsSync(`${file}-journal`) && isFile(file))
    return imageOf(readWithLog(file), file, role);
  if (fs.existsSync(`${file}-wal`) || fs.existsSync(`${file}-journal`)) return openDatabase(file, { readonly: true, role });
  // openDatabase's checks first: a missing path or a folder is refused with its words.
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) return openDatabase(file, { readonly: true, role });
  return imageOf(fs.readFileSync(file), file, role);
}

function isFile(file: string): boolean {
  return fs.existsSync(file) && fs.statSync(file).isFile();
}

/** The pages of `file` with its -wal's committed transactions, read through a copy of both in a temporary folder (removed). */
function readWithLog(file: string): Buffer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-read-'));
  try {
    const copy = path.join(dir, 'db');
    fs.copyFileSync(file, copy);
    fs.copyFileSync(`${file}-wal`, `${copy}-wal`);
    let db: Db;
    try {
      db = new Database(copy, { fileMustExist: true });
    } catch {
      return fs.readFileSync(file); // not a database SQLite opens: imageOf refuses it with its words
    }
    try {
      return db.serialize();
    } catch {
      return fs.readFileSync(file);
    } finally {
      db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A read-only in-memory connection over a database image. */
function imageOf(bytes: Buffer, file: string, role: string): Db {
  const notDb = () => new InvalidInputError('NOT_A_DATABASE', `${role} ${file} is not a SQLite database. Pass the path of a SQLite file.`);
  // An empty file is an empty database to SQLite (and to openDatabase): one with no tables.
  if (bytes.length === 0) return new Database(':memory:');
  if (bytes.length < 100 || !bytes.subarray(0, 16).equals(SQLITE_HEADER)) throw notDb();
  // An in-memory database cannot be in WAL mode: the header's read and write versions (2: WAL) become 1 (rollback) in the copy.
  if (bytes[18] === 2) bytes[18] = 1;
  if (bytes[19] === 2) bytes[19] = 1;
  const db = new Database(bytes, { readonly: true });
  try {
    db.defaultSafeIntegers(true);
    db.prepare('SELECT count(*) FROM main.sqlite_schema').get();
  } catch (cause) {
    db.close();
    throw new InvalidInputError(
      'NOT_A_DATABASE',
      `${role} ${file} is not a SQLite database (${(cause as Error).message}). Pass the path of a SQLite file.`,
      {
        cause,
      },
    );
  }
  return db;
}
