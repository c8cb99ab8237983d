import type { Db } from '../../sqlite/index.ts';
import { SluiceError, errorCode } from '../../errors.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { insertProjection, newProjectionRecord, readProjection, recordFailure } from '../target/index.ts';

/*
 * A projection's failed attempt: one projection's error (a custom handler's
 * throw, a statement sluice refused it, a gap, ...) fails that projection,
 * not the run. Its transaction is rolled back, the failure is recorded in
 * its row (health reports it, with the repair), and the other projections
 * go on. sync records one this way (sync.ts), and so do import and
 * subscribe for a custom handler's failure (export/importer.ts).
 */

/** The code and message a failed attempt records: a SluiceError's code, SQLite's (SQLITE_CONSTRAINT_...), else APPLY_FAILED; `changed`: what health says of a table of it changed by hand, which is the cause then (TARGET_TABLE_CHANGED). */
export function failureOf(err: unknown, changed?: string): { readonly code: string; readonly message: string } {
  if (changed !== undefined) return { code: 'TARGET_TABLE_CHANGED', message: changed };
  const code = err instanceof SluiceError ? err.code : typeof errorCode(err) === 'string' ? String(errorCode(err)) : 'APPLY_FAILED';
  return { code, message: err instanceof Error ? err.message : String(err) };
}

/** A projection whose failure is to be recorded, with what its row is made of when it has none yet (its first build failed). */
export interface FailedRow {
  readonly name: string;
  readonly p: CompiledProjection;
  /** The source id its row records (read only when it has no row yet). */
  readonly sourceId: () => string;
  /** The source's path its row records (null: only its stream is known, import and subscribe). */
  readonly sourcePath: string | null;
}

/**
 * Records projection `row`'s failed attempt in the transaction open on `db`
 * (the failed one rolled back): one whose first build failed has no row
 * yet, and gets one (state building, no cursor), so health shows the
 * failure instead of a target with nothing in it, and the next run builds
 * it from a snapshot.
 */
export function recordFailed(db: Db, schema: string, row: string | FailedRow, code: string, message: string): void {
  const name = typeof row === 'string' ? row : row.name;
  if (typeof row !== 'string' && readProjection(db, schema, name) === undefined)
    insertProjection(db, schema, newProjectionRecord(row.p, row.sourceId(), row.sourcePath, 'building'));
  recordFailure(db, schema, name, code, message);
}
