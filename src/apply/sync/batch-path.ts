import type { ChangeBatch } from '../../feed/index.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { kindOf } from '../../projection/index.ts';
import type { ProjectionRecord } from '../target/index.ts';
import { triggerWriteFix, triggerWriteText, userTriggerWriteOf, type TriggerWrite } from '../target/index.ts';
import { tableShapeProblem } from '../check/index.ts';
import {
  applyRows,
  commitBatch,
  positionBatch,
  suspension,
  storedSuspension,
  suspensionGate,
  targetFile,
  type ApplyTarget,
  type BatchEnd,
  type RowsApplied,
  type Suspension,
} from '../projections/index.ts';

/*
 * The one way a batch of events reaches a stored projection, for sync's
 * step (step.ts) and for import and subscribe (export/importer.ts) alike:
 * the gate (does a stored suspension stand?), the position (the cursor
 * rule: already applied, an overlap, a gap), the target tables' shape (a
 * table changed by hand: its columns, their declared types' affinities and
 * collations, the keys its kind's writes need; TARGET_TABLE_CHANGED, the
 * rule health says it by), the apply (through the projection's kind),
 * and the commit of the cursor with the rows, all in the caller's target
 * transaction. A suspension is returned for the caller to roll back and
 * record (applier.ts recordSuspension).
 */

/** How a caller's batch goes: where it is read from, what it says of a failure, the cursor it ends at. */
export interface BatchPlan {
  /** The batch, read only once the gate is open. */
  readonly batch: () => ChangeBatch;
  /** A batch the caller asked for (sync's explicit range): a user's UNIQUE index that suspended the projection is tried again at once. */
  readonly explicit: boolean;
  /** What the batch is called in a BATCH_GAP error. */
  readonly what: string;
  /** What a BATCH_GAP error says to do; default: apply the batch that holds the missing events first, or sync from the stored cursor. */
  readonly gapFix?: string;
  /** Where the batch ends, for what a UNIQUE failure says (applier.ts BatchEnd). */
  readonly end: BatchEnd;
  /** The cursor token at `seq`, where the batch ends. */
  readonly cursor: (seq: number) => string;
  /**
   * sync: the batch up to a committed state of the source, when this one
   * breaks a user's UNIQUE index and that batch is near enough to try once
   * (a batch boundary may cut a source transaction); undefined: none.
   */
  readonly wider?: (applied: ChangeBatch) => ChangeBatch | undefined;
  /**
   * sync across a schema window: whether the rows, the batch applied, are
   * the source's at `seq`. Given, the batch applies even when empty (the
   * proof moves the cursor past the window), and a failed proof, or a batch
   * that does not apply (TARGET_DIVERGED, UNCAPTURED_REPLACE: the history
   * is not whole), is `unproved`: the caller rebuilds.
   */
  readonly proves?: (seq: number) => boolean;
}

export type BatchResult =
  /** The stored suspension stands: nothing applied. */
  | { readonly kind: 'held'; readonly suspension: Suspension }
  /** Already applied (the batch ends at or before the stored cursor). */
  | { readonly kind: 'none' }
  | Suspension
  | { readonly kind: 'unproved' }
  | { readonly kind: 'committed'; readonly rows: RowsApplied; readonly seq: number; readonly cursor: string; readonly batch: ChangeBatch };

/** Gate, position, apply and commit one batch to projection `p` (stored as `rec`, at `storedSeq`), in the caller's transaction. */
export async function runBatchPath(
  t: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord,
  storedSeq: number,
  plan: BatchPlan,
): Promise<BatchResult> {
  const held = suspensionGate(t, p, rec, plan.explicit);
  if (held !== undefined) return { kind: 'held', suspension: held };
  const read = plan.batch();
  let batch = positionBatch(p, storedSeq, read, plan.what, plan.gapFix) ?? (plan.proves === undefined ? undefined : read);
  if (batch === undefined) return { kind: 'none' };
  // A table changed by hand (a column dropped or renamed, another declared type or collation, its key lost): health's rule, before anything is written.
  const changed = tableShapeProblem(t.db, t.schema, p);
  if (changed !== undefined) return suspension('TARGET_TABLE_CHANGED', { ...changed });
  // A user's trigger on its tables that writes another projection's table (or sluice's own) would fire inside this
  // transaction, unseen by protect's guards and the hand-edit watch: nothing is applied while it is there.
  const trigger = userTriggerWriteOf(t.db, t.schema, p.name);
  // The one it is suspended for, still there: its suspension stands as stored (a follower writes nothing each pass).
  if (trigger !== undefined && rec.state === 'suspended' && rec.reason === 'USER_TRIGGER_WRITES_PROJECTION' && sameTrigger(rec, trigger))
    return { kind: 'held', suspension: storedSuspension(rec) };
  if (trigger !== undefined)
    return suspension('USER_TRIGGER_WRITES_PROJECTION', {
      trigger: trigger.trigger,
      on: trigger.on,
      table: trigger.table,
      owner: trigger.projection,
      message: `projection ${p.name} was not applied: ${triggerWriteText(trigger)} whenever sluice writes table ${trigger.fired.table}, inside sluice's own transaction (where neither sluice protect's guards nor the hand-edit watch see it), so applying ${p.name} would change ${trigger.projection === null ? "sluice's own bookkeeping" : `projection ${trigger.projection}`} behind sluice's back. ${upper(triggerWriteFix(trigger, targetFile(t)))}; then run sluice sync again (or the import, or subscribe, that feeds it): ${p.name} takes its events from where it stopped`,
    });
  let r = await applyRows(t, p, batch, plan.end);
  // Intermediate batches need not reproduce source transactions: a batch
  // boundary may cut one, and in between a UNIQUE index a user added to the
  // target can be broken although no committed state of the source breaks
  // it. Such a batch is tried once more up to a committed state before the
  // projection is suspended, when the caller has one near enough.
  if (r.kind === 'suspended' && r.reason === 'TARGET_CONSTRAINT' && kindOf(p).foreignUnique === 'guard') {
    const wider = plan.wider?.(batch);
    if (wider !== undefined) {
      batch = wider;
      r = await applyRows(t, p, batch, 'committed');
    }
  }
  if (plan.proves !== undefined && r.kind === 'suspended' && (r.reason === 'TARGET_DIVERGED' || r.reason === 'UNCAPTURED_REPLACE'))
    return { kind: 'unproved' };
  if (r.kind === 'suspended') return r;
  const seq = batch.toSeq;
  if (plan.proves !== undefined && !plan.proves(seq)) return { kind: 'unproved' };
  const cursor = plan.cursor(seq);
  commitBatch(t, p, cursor, seq, r);
  return { kind: 'committed', rows: r, seq, cursor, batch };
}

/** Whether `rec`'s stored suspension names trigger write `w` (the trigger, the table it is on, the table it writes). */
function sameTrigger(rec: ProjectionRecord, w: TriggerWrite): boolean {
  const d = rec.detail ?? {};
  return d.trigger === w.trigger && d.on === w.on && d.table === w.table;
}

function upper(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
