import type { JsonValue } from '../../sqlite/index.ts';
import type { SourceAffinityDetail } from '../projections/index.ts';

/* What verify reports (verify.ts), apart from it so that what records its verdicts (verify-record.ts) reads them without a circle. */

export interface VerifyDiff {
  readonly key: readonly JsonValue[];
  /** missing: in the source, not the target; extra: in the target only; different: both, other values. */
  readonly kind: 'missing' | 'extra' | 'different';
}

export interface ProjectionVerification {
  readonly name: string;
  readonly ok: boolean;
  /** The seq both sides were compared at. */
  readonly seq: number;
  readonly checked: number;
  /** Keys changed on the source after the projection's cursor: compared as they were at the cursor (verify-rewind.ts). */
  readonly inFlight: number;
  readonly diffs: readonly VerifyDiff[];
  /**
   * Why it is not ok without a diff: the stored state's reason (suspended),
   * SYNC_FAILING (its last sync failed), BEHIND (keys changed after its
   * cursor), DEFINITION_CHANGED, or a stored definition that no longer fits
   * the source (DEFINITION_INVALID, SOURCE_COLUMN_MISSING,
   * SOURCE_TABLE_MISSING), a cursor that does not continue on the source
   * (validateCursor's reason: HISTORY_DIVERGED, TABLE_REARMED, ...), or
   * SCHEMA_WINDOW (rows that differ after DDL sluice did not make: the next
   * sync rebuilds it). NOT_VERIFIABLE for a custom projection (ok).
   */
  readonly reason?: string;
  /** What was not compared and why, with what to do; set whenever something was left out. */
  readonly skipped?: string;
  /** What this check cannot see (for example ±0.0 in columns without affinity), one line each. */
  readonly caveats?: readonly string[];
  /**
   * What repairs what verify found, with the command, as health prints it
   * (src/reasons.ts, rendered with the real paths): for rows that differ
   * (ROWS_DIFFER), a suspension, or a stored definition that no longer fits
   * the source.
   */
  readonly repair?: string;
  /**
   * Its rows differ because source columns it reads hold values their
   * declared types store in another class (reason SOURCE_AFFINITY): which,
   * and the statement that stores them again in the source.
   */
  readonly sourceAffinity?: SourceAffinityDetail;
  /** This verify suspended it (TARGET_EDITED, or SOURCE_AFFINITY): it differs from its source (verify-record.ts). */
  readonly suspended?: true;
  /** This verify found it equal again and cleared its TARGET_EDITED. */
  readonly cleared?: true;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly sourceSeq: number;
  readonly projections: readonly ProjectionVerification[];
}
