import fs from 'node:fs';
import Database from 'better-sqlite3';
import { InvalidInputError } from '../errors.ts';
import { openDatabase, type Db } from './connection.ts';

/*
 * Reading a database without touching its folder. Even a read-only
 * connection to a WAL-mode file makes its -wal and -shm, and they outlive
 * it. A command that must leave every file as it found it (sluice init)
 * reads an in-memory copy of the file instead: while no -wal or -journal is
 * there, the main file holds every committed transaction. While one is
 * there, another connection has the file open (or crashed in it): a
 * read-only connection then creates nothing that is not there already, and
 * reads what that file holds too.
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
  if (fs.existsSync(`${file}-wal`) || fs.existsSync(`${file}-journal`)) return openDatabase(file, { readonly: true, role });
  // openDatabase's checks first: a missing path or a folder is refused with its words.
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) return openDatabase(file, { readonly: true, role });
  const bytes = fs.readFileSync(file);
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
