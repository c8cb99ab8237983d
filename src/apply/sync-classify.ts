import { FailClosedError } from '../errors.ts';
import { quoteIdent } from '../sqlite/quote.ts';
import { cachedStatement } from '../sqlite/statement-cache.ts';
import type { SourceView } from '../feed/source-view.ts';
import type { CompiledProjection } from '../projection/compile.ts';
import { classifyChange, type AlterDecision, type AlterReasonCode, type ClassifiedChange } from '../projection/classify.ts';
import type { ApplyTarget } from './applier.ts';
import { alterFacts } from './explain-facts.ts';
import { newProjectionRecord, PROJECTIONS_TABLE, repairAction, type ProjectionRecord } from './target-meta.ts';

/*
 * sync's side of 003's classification: a projection whose stored
 * fingerprint is not its definition's is classified as explain classifies
 * it (classifyChange, over the same facts: explain-facts.ts alterFacts),
 * in the step's own target transaction, before anything is written.
 *
 * - Compatible: the new definition, shape and fingerprint are stored in
 *   that transaction and the projection goes on from its cursor (no rebuild).
 * - Rebuildable: rebuilt, as before (protected where the kind allows).
 * - Rejected: refused (AlterRejectedError); the transaction rolls back, so
 *   its tables, cursor and definition are as they were; sync records the
 *   failure alone (its code and message), so health shows it and its repair.
 *
 * Some Rejected changes already have an outcome of their own in sync, and
 * sync keeps it (see SYNC_DECIDES).
 */

/**
 * Rejected reasons that sync does not refuse, because it already gives the
 * change one of 003's outcomes. A source column the projection reads that
 * was dropped or renamed makes a definition naming it fail to compile, and
 * sync suspends it (SOURCE_COLUMN_MISSING); a mirror, which names no
 * column, is rebuilt over the new shape (and so is one of a retyped column).
 * A cursor that cannot continue suspends with its own reason (TABLE_UNARMED,
 * NEEDS_IMAGES_MODE, ...) when the rebuild reads the source. A UNIQUE index
 * a user added is made again by the rebuild, and one the new rows break is
 * left out and reported (ProjectionReport.droppedIndexes). Any other
 * Rejected reason (ALTER_CUSTOM_NO_SHADOW, ALTER_NO_SPACE, one added later)
 * is refused.
 */
const SYNC_DECIDES: ReadonlySet<AlterReasonCode> = new Set<AlterReasonCode>([
  'ALTER_SOURCE_COLUMN_DROPPED',
  'ALTER_SOURCE_COLUMN_RENAMED',
  'ALTER_SOURCE_COLUMN_RETYPED',
  'ALTER_CURSOR_INVALID',
  'ALTER_TARGET_UNIQUE_INDEX',
]);

/** A change to a projection that classifies as Rejected: refused before anything was written. */
export class AlterRejectedError extends FailClosedError {
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

/** The file of the attached target (`schema`), for the free space of its file system. */
function targetFile(target: ApplyTarget): string {
  const rows = target.db.prepare('PRAGMA database_list').all() as { name: string; file: string }[];
  return rows.find((r) => r.name === target.schema)?.file ?? '';
}

/**
 * Classifies the change from the stored `rec` to `p` (their fingerprints
 * differ). True when it is Compatible: the new definition is then stored
 * (in the caller's transaction) and the projection continues from its
 * cursor. False when it must be rebuilt. Throws AlterRejectedError for a
 * Rejected change that sync refuses, having written nothing.
 */
export function storedIfCompatible(target: ApplyTarget, p: CompiledProjection, rec: ProjectionRecord, view: SourceView): boolean {
  // A projection that never built has no state to keep: its first build.
  const old = rec.cursor === null ? undefined : rec;
  const decision = classifyChange(old, p, alterFacts(target.db, view, targetFile(target), old, p).facts);
  if (decision.classification === 'Compatible') {
    const row = newProjectionRecord(p, target.sourceId, target.sourcePath, 'active');
    cachedStatement(
      target.db,
      `UPDATE ${quoteIdent(target.schema)}.${PROJECTIONS_TABLE} SET definition = ?, source_shape = ?, fingerprint = ?, updated_ms = ? WHERE name = ?`,
    ).run(row.definition, row.sourceShape, row.fingerprint, Date.now(), p.name);
    return true;
  }
  const refused = decision.changes.find((c) => c.classification === 'Rejected' && !SYNC_DECIDES.has(c.reason));
  if (refused !== undefined)
    throw new AlterRejectedError(
      decision,
      refused,
      repairAction(p.name, refused.reason, target.sourcePath ?? undefined, targetFile(target)),
    );
  return false;
}
