import { FailClosedError } from '../../errors.ts';
import type { ReasonCode } from '../../reasons.ts';
import { quoteIdent, cachedStatement, repairAction, type Db } from '../../sqlite/index.ts';
import type { SourceView } from '../../feed/index.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { classifyChange, type AlterDecision, type ClassifiedChange, type UncompiledProjection, kindOf } from '../../projection/index.ts';
import {
  shadowBuildOf,
  newProjectionRecord,
  PROJECTIONS_TABLE,
  SELF_CLEARING_SUSPENSIONS,
  type ProjectionRecord,
} from '../target/index.ts';
import { BROKEN_DEFINITION_REASONS, brokenReason, nextSyncCapture, targetFile, type ApplyTarget } from '../projections/index.ts';
import { alterFacts, targetAlterFacts } from './explain-facts.ts';

/*
 * sync's side of 003's classification: a projection whose stored
 * fingerprint is not its definition's is classified as explain classifies
 * it (classifyChange, over the same facts: explain-facts.ts alterFacts),
 * in the step's own target transaction, before anything is written: one
 * of the facts the step decides from (step-decision.ts).
 *
 * - Compatible: the new definition, shape and fingerprint are stored in
 *   that transaction (storeDefinition) and the projection goes on from its
 *   cursor (no rebuild).
 * - Rebuildable: rebuilt, as before (protected where the kind allows).
 * - Rejected: refused (AlterRejectedError); the transaction rolls back, so
 *   its tables, cursor and definition are as they were; sync records the
 *   failure alone (its code and message), so health shows it and its repair.
 *
 * A Rejected change that sync suspends the projection for instead
 * (ClassifiedChange.suspends: a cursor that neither continues nor can be
 * rebuilt from the source) is left to the step, which suspends it with
 * that reason. predictSync says, from the same decision, what the next
 * sync does; explain reports it, and a test holds the two together
 * (test/apply/evolution/explain-predicts-sync.test.ts).
 */

/** A change to a projection that classifies as Rejected: refused before anything was written. */
class AlterRejectedError extends FailClosedError {
  readonly decision: AlterDecision;
  constructor(decision: AlterDecision, refused: ClassifiedChange, repair: string) {
    super(
      refused.reason,
      `Projection ${decision.name}: its change is Rejected (${refused.reason}): ${refused.why ?? 'it can neither continue nor be rebuilt'}. Nothing was written: the projection keeps its rows and its cursor, and is not synced until the change is fixed. ${repair}`,
      { projection: decision.name, classification: 'Rejected', reason: refused.reason, repair },
    );
    this.name = 'AlterRejectedError';
    this.decision = decision;
  }
}

/**
 * Classifies the change from the stored `rec` to `p` (their fingerprints
 * differ), reading only: `compatible` goes on from its cursor once the new
 * definition is stored (storeDefinition, in the step's transaction);
 * `rebuild`; or refused with an AlterRejectedError for a Rejected change
 * that sync refuses, which writes nothing.
 */
export function classifyForSync(
  target: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord,
  view: SourceView,
): 'compatible' | 'rebuild' | { readonly refused: { readonly reason: ReasonCode; readonly error: AlterRejectedError } } {
  // A projection that never built has no state to keep: its first build.
  const old = rec.cursor === null ? undefined : rec;
  const decision = classifyChange(old, p, alterFacts(target.db, view, targetFile(target), old, p, { cost: 'bound' }).facts);
  const out = outcome(target, p, decision);
  return out === 'compatible' || 'refused' in out ? out : 'rebuild';
}

/**
 * The same classification (classifyChange) of the change from the built
 * `rec` to `p` (their fingerprints differ) for a target fed by a stream
 * (import, subscribe), which has no source to read: from the facts the
 * target alone holds (targetAlterFacts), so what only the source proves
 * (that two filters select the same rows) is not proved. `compatible` goes
 * on from its cursor once the new definition is stored (storeDefinition);
 * `rebuild` needs a snapshot (the decision says why); a Rejected change is
 * refused with sync's error. Reads only.
 */
export function classifyFromTarget(
  target: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord,
):
  | 'compatible'
  | { readonly rebuild: AlterDecision }
  | { readonly refused: { readonly reason: ReasonCode; readonly error: AlterRejectedError } } {
  return outcome(target, p, classifyChange(rec, p, targetAlterFacts(target.db, target.schema, rec, p)));
}

function outcome(
  target: ApplyTarget,
  p: CompiledProjection,
  decision: AlterDecision,
):
  | 'compatible'
  | { readonly rebuild: AlterDecision }
  | { readonly refused: { readonly reason: ReasonCode; readonly error: AlterRejectedError } } {
  if (decision.classification === 'Compatible') return 'compatible';
  const refused = refusal(decision);
  if (refused === undefined) return { rebuild: decision };
  const error = new AlterRejectedError(
    decision,
    refused,
    repairAction(p.name, refused.reason, target.sourcePath ?? undefined, targetFile(target), p.source.table),
  );
  return { refused: { reason: refused.reason, error } };
}

/** Stores `p`'s definition, source shape and fingerprint in its row (a Compatible change), in the caller's transaction. */
export function storeDefinition(target: ApplyTarget, p: CompiledProjection): void {
  const row = newProjectionRecord(p, target.sourceId, target.sourcePath, 'active');
  cachedStatement(
    target.db,
    `UPDATE ${quoteIdent(target.schema)}.${PROJECTIONS_TABLE} SET definition = ?, source_shape = ?, fingerprint = ?, updated_ms = ? WHERE name = ?`,
  ).run(row.definition, row.sourceShape, row.fingerprint, Date.now(), p.name);
}

/** The Rejected change sync refuses (the first that it does not suspend for), if any. */
function refusal(decision: AlterDecision): ClassifiedChange | undefined {
  return decision.changes.find((c) => c.classification === 'Rejected' && c.suspends === undefined);
}

/** What the next sync does with one projection (ProjectionReport says what it did). */
export type SyncPrediction =
  /** Goes on from its cursor: not rebuilt, its rows as they are (`rebuilt` absent). */
  | { readonly does: 'continue' }
  /**
   * Built from a snapshot: `reason` is the report's `rebuilt` (null for a
   * first build), `swapped` whether it is built beside the live projection
   * and swapped in (the report's `swapped: true`) rather than in one transaction.
   */
  | { readonly does: 'rebuild'; readonly reason: string | null; readonly swapped: boolean }
  /**
   * Refused before anything is written, with error `code`: the
   * projection's error in the report, or (`run`) the whole sync's, for a
   * given definition that does not compile or collides with another.
   */
  | { readonly does: 'refuse'; readonly code: string; readonly run: boolean }
  /** Suspended with `reason` (the report's state and reason), shown by health with its repair. */
  | { readonly does: 'suspend'; readonly reason: string };

/**
 * What the next sync does, given the classification `decision` of the
 * change from `rec` (stored, undefined when not in the target) to `next`,
 * and whether `next` is given to the sync (`--projection`) or is the
 * target's stored definition.
 */
export function predictSync(
  decision: AlterDecision,
  rec: ProjectionRecord | undefined,
  next: CompiledProjection | UncompiledProjection,
  given: boolean,
  /** The source, read in the caller's transaction. */
  source: { readonly db: Db; readonly view: SourceView },
): SyncPrediction {
  if ('error' in next) {
    // A given definition is the caller's error (sync throws it); a stored one is suspended on its own (broken-definition.ts).
    if (given || next.error.code === 'TARGET_COLLISION') return { does: 'refuse', code: next.error.code, run: true };
    return {
      does: 'suspend',
      reason: brokenReason(next.definition === undefined ? 'parse' : 'compile', next.error.code, next.error.message),
    };
  }
  if (decision.classification === 'Compatible') return { does: 'continue' };
  // A suspension only a rebuild clears comes before any classification (step.ts's gate).
  const held =
    rec?.state === 'suspended' && !SELF_CLEARING_SUSPENSIONS.has(rec.reason ?? '') && !BROKEN_DEFINITION_REASONS.has(rec.reason ?? '');
  if (held) return { does: 'suspend', reason: rec.reason ?? 'SUSPENDED' };
  const refused = refusal(decision);
  if (refused !== undefined) return { does: 'refuse', code: refused.reason, run: false };
  const suspended = decision.changes.find((c) => c.suspends !== undefined);
  if (suspended?.suspends !== undefined) return { does: 'suspend', reason: suspended.suspends };
  if (rec === undefined || rec.cursor === null) return { does: 'rebuild', reason: null, swapped: false };
  const cursor = decision.changes.find((c) => c.change.kind === 'cursor')?.change;
  const redefined = rec.fingerprint !== next.fingerprint || (rec.state === 'suspended' && BROKEN_DEFINITION_REASONS.has(rec.reason ?? ''));
  // Opening the source re-arms a table whose triggers or schema changed, and names that as the cause (sync.ts #rearmCause).
  const arming = nextSyncCapture(source.db, source.view, rec.sourceTable);
  const rearmed = arming.rearmed && (rec.fingerprint === next.fingerprint || arming.why === 'SCHEMA_CHANGED');
  const reason = rearmed ? 'CAPTURE_REARMED' : redefined || cursor?.kind !== 'cursor' ? 'DEFINITION_CHANGED' : cursor.reason;
  // Across DDL sluice did not make, a copy verify can check that does not match is rebuilt in one transaction (step.ts).
  const unproved = reason === 'SCHEMA_WINDOW' && kindOf(next).verification !== undefined;
  return { does: 'rebuild', reason, swapped: !unproved && shadowBuildOf(next) !== undefined };
}
