import type { Db } from '../../sqlite/index.ts';
import { quoteIdent, rollbackOpen } from '../../sqlite/index.ts';
import { SluiceError, isSqliteCorrupt } from '../../errors.ts';

/*
 * A damaged file (SQLITE_CORRUPT: a page overwritten, a file truncated or
 * spliced by something other than SQLite) is named with its fix: a target
 * is sluice's own and can be rebuilt from the source; a source cannot.
 * Sync records the failure in the projection's row when it can (health
 * reads it, without scanning the file), and writes nothing else.
 */

export function damagedTarget(file: string, cause?: unknown): SluiceError {
  return new SluiceError(
    'TARGET_CORRUPT',
    `Target ${file}: the file is damaged (SQLITE_CORRUPT). Restore it from a backup, or delete it and run sync again to rebuild it from the source.`,
    { cause },
  );
}

export function damagedSource(file: string, cause?: unknown): SluiceError {
  return new SluiceError(
    'SOURCE_CORRUPT',
    `Source ${file}: the file is damaged (SQLITE_CORRUPT). Restore it from a backup; sluice cannot rebuild a source. The target was not changed.`,
    { cause },
  );
}

/** Whether one database of a connection fails PRAGMA quick_check (or cannot even run it). */
export function fails(db: Db, schema: string): boolean {
  try {
    const first = db
      .prepare(`PRAGMA ${quoteIdent(schema)}.quick_check(1)`)
      .pluck()
      .get();
    return first !== 'ok';
  } catch (err) {
    return isSqliteCorrupt(err);
  }
}

/**
 * For a SQLITE_CORRUPT met by an apply session: the error naming the file
 * that fails quick_check (the target is checked first), or undefined when
 * `err` is not corruption or neither file fails the check.
 */
export function damagedFile(
  db: Db,
  err: unknown,
  files: { readonly source: string; readonly target: string },
  targetSchema: string,
): SluiceError | undefined {
  if (!isSqliteCorrupt(err)) return undefined;
  rollbackOpen(db);
  if (fails(db, targetSchema)) return damagedTarget(files.target, err);
  if (fails(db, 'main')) return damagedSource(files.source, err);
  return undefined;
}
