import type { FedBy } from '../target/index.ts';

/* What health reports (health.ts), apart from it so that its parts (health-consumers.ts) build them without a circle. */

/** A projection's failed sync attempts since its last success. */
export interface FailureHealth {
  /** The SluiceError code, (TARGET_FULL, TARGET_BUSY, ...), the SQLite error code (SQLITE_CONSTRAINT_TRIGGER, ...), or APPLY_FAILED. */
  readonly code: string;
  readonly message: string;
  /** When the last one failed (ms since the epoch); null for a target made before failures were timed. */
  readonly ms: number | null;
  /** Failed attempts since the last success (at least 1). */
  readonly consecutive: number;
}

export interface ProjectionHealth {
  readonly name: string;
  readonly kind: string;
  readonly state: string;
  readonly reason: string | null;
  readonly detail: unknown;
  readonly seq: number;
  readonly sourcePath: string | null;
  /** The source's high-water mark, when the source could be read. */
  readonly sourceSeq: number | null;
  /**
   * Events of the projection's table after its seq. When its cursor is below
   * the source's pruned horizon (those events were deleted, and their tables
   * are unknown): sourceSeq - seq, every seq it has not applied.
   */
  readonly lagEvents: number | null;
  /**
   * How long the oldest unapplied event of its table has waited (0 when
   * caught up). Below the pruned horizon: since the last event it applied
   * (an upper bound), or, with none, since the oldest retained one.
   */
  readonly lagMs: number | null;
  readonly lastError: string | null;
  /** Set while the projection's last sync attempt failed. */
  readonly failure: FailureHealth | null;
  /**
   * Why the stored cursor cannot continue on the source (a validateCursor
   * reason). One the next sync rebuilds from by itself (kind `rebuilt` in
   * src/reasons.ts: SCHEMA_WINDOW, GENERATION_CHANGED, CURSOR_PRUNED, ...) is
   * not a problem; any other is (the source must be fixed first). Where a
   * snapshot would repair the cursor but the next sync cannot build from the
   * table (apply/projections/cursor-break.ts), the suspension it gives
   * instead (NEEDS_IMAGES_MODE for a table switched to keys mode, whose
   * cursor says SCHEMA_CHANGED).
   */
  readonly rebuild: string | null;
  readonly needsAction: boolean;
  /** What to do about the first problem, when something needs action. */
  readonly action?: string;
  /** Every problem found, each with what to do about it (the first is `action`). */
  readonly problems: readonly string[];
  /**
   * How it is fed: by sync (its source), subscribe (the broker URL, stream
   * and source id it reads) or import (the file it last imported, when);
   * null when not known (a projection with no source path made before
   * that was recorded). Absent on a pending or lost entry.
   */
  readonly fedBy?: HealthFedBy | null;
  /** Something true that needs no action (an imported projection's lag is not tracked). */
  readonly note?: string;
}

/** ProjectionHealth.fedBy: FedBy (fed-by.ts), or sync's source. */
export type HealthFedBy = FedBy | { readonly via: 'sync'; readonly source: string };

export interface HealthReport {
  readonly ok: boolean;
  readonly projections: readonly ProjectionHealth[];
}

/**
 * The health of a projection the target does not hold (yet): one "*" asks
 * for (pending, MIRROR_NOT_BUILT) or one the source acknowledges (lost,
 * CONSUMER_NOT_BUILT). Nothing of it can be read from the target: no lag,
 * no failure, no rebuild; it needs action.
 */
export function notHeldHealth(
  p: Pick<ProjectionHealth, 'name' | 'kind' | 'state' | 'reason' | 'detail' | 'seq' | 'sourcePath' | 'problems'> & {
    readonly action: string;
  },
): ProjectionHealth {
  const { name, kind, state, reason, detail, seq, sourcePath, action, problems } = p;
  // In the order of every other projection's health (its JSON keys).
  return {
    name,
    kind,
    state,
    reason,
    detail,
    seq,
    sourcePath,
    sourceSeq: null,
    lagEvents: null,
    lagMs: null,
    lastError: null,
    failure: null,
    rebuild: null,
    needsAction: true,
    action,
    problems,
  };
}
