import { hotJournal, noRoomToOpen, encodingMismatch, textEncoding, openDatabase, closeDatabase, type Db } from '../../sqlite/index.ts';
import { InvalidInputError, errorCode } from '../../errors.ts';

/** The schema name under which the target database is attached to the source connection. */
export const TARGET_SCHEMA = 'tgt';

/** A target at `targetPath` that is not a SQLite database (a file of another kind, a folder). */
export function notADatabase(targetPath: string, cause?: unknown): InvalidInputError {
  return new InvalidInputError(
    'NOT_A_DATABASE',
    `Target ${targetPath} is not a SQLite database. Pass a new path or an existing sluice target.`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Attaches the existing database `targetPath` to `db` as TARGET_SCHEMA and
 * reads its schema once, so that what keeps it from being read is said here,
 * naming the file and the fix, for every connection that attaches a target
 * (sync, verify, explain, plan): a file that is not a database
 * (NOT_A_DATABASE); a hot journal beside it, which a read-only connection
 * may not roll back, or a full disk (DB_OPEN_FAILED, as openDatabase says
 * them); another text
 * encoding than the source's. Nothing is written.
 */
export function attachTarget(db: Db, targetPath: string): void {
  try {
    db.prepare(`ATTACH DATABASE ? AS ${TARGET_SCHEMA}`).run(targetPath);
    // ATTACH opens the file lazily: its first read finds a non-database or a hot journal.
    db.prepare(`SELECT 1 FROM ${TARGET_SCHEMA}.sqlite_schema LIMIT 1`).get();
  } catch (cause) {
    throw attachError(db, targetPath, cause);
  }
}

/** The error a failed attach or first read of target `targetPath` is, with its file and fix (the cause itself when none fits). */
function attachError(db: Db, targetPath: string, cause: unknown): unknown {
  if (errorCode(cause) === 'SQLITE_NOTADB') return notADatabase(targetPath, cause);
  if (errorCode(cause) === 'SQLITE_READONLY_ROLLBACK') return hotJournal('target', targetPath, cause);
  // A full disk, where SQLite cannot make or grow the target's -shm: said as openDatabase says it.
  const full = noRoomToOpen('target', targetPath, cause);
  if (full !== undefined) return full;
  // A target made in another text encoding than the source (a new one takes the source's): say so, with the fix.
  if (String((cause as Error).message).includes('same text encoding'))
    return encodingMismatch(targetPath, targetEncoding(targetPath), textEncoding(db));
  return cause;
}

function targetEncoding(file: string): string {
  const t = openDatabase(file, { readonly: true, role: 'target' });
  try {
    return textEncoding(t);
  } finally {
    closeDatabase(t);
  }
}
