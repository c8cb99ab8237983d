import type { ReasonCode } from '../../reasons.ts';
import type { ProjectionState } from '../target/index.ts';
import {
  BROKEN_DEFINITION_REASONS,
  cursorBreak,
  decidedSuspension as suspend,
  unbuildable,
  type CaptureFacts,
} from '../projections/index.ts';

/*
 * What one step of sync does with one projection, decided from plain facts
 * before anything is done (step.ts gathers them in the step's target
 * transaction, then carries the decision out). Pure: no database, no clock;
 * test/apply/sync/ tables it.
 *
 * The facts come in two parts, because the second costs reads the first
 * often makes needless: what the stored row says (RowFacts), and, when the
 * row leaves the decision to them, the definition's classification and the
 * cursor (CursorFacts). decideStep takes both; decideFromRow says whether
 * the row alone decides.
 */

/** The target's row for the projection, as far as the decision reads it. */
export interface StoredFacts {
  /** It has a cursor (built at least once). */
  readonly built: boolean;
  readonly state: ProjectionState;
  readonly reason: ReasonCode | null;
}

/** The projection's source table in the source's capture, and whether it can be built from. */
export interface TableFacts extends CaptureFacts {
  /** The columns it is captured with are the ones the projection was compiled against. */
  readonly columnsMatch: boolean;
}

export interface RowFacts {
  readonly projection: { readonly table: string; readonly needsImages: boolean; readonly shadow: boolean };
  /** sync --reinit: rebuilt whatever its state. */
  readonly reinit: boolean;
  /** An explicit batch (fromSeq, toSeq] (Syncer.applyBatch). */
  readonly range?: { readonly fromSeq: number; readonly toSeq: number };
  /** Undefined: the target does not hold the projection. */
  readonly stored?: StoredFacts;
  /**
   * The stored suspension: none or one whose cause is gone (`open`), one that
   * stands until a rebuild or a fix (`stands`), or one by a user's UNIQUE
   * index tried again later (`waits`: applier.ts suspensionGate).
   */
  readonly gate: 'open' | 'stands' | 'waits';
  /** A protected rebuild in progress: none, one that goes on, or one that no longer fits (rolled back first). */
  readonly build: 'none' | 'resumes' | 'stale';
  readonly table: TableFacts;
}

export interface CursorFacts {
  /**
   * The definition against the stored one: the same fingerprint (`same`),
   * the same projection under an older fingerprint scheme (`restamp`), or
   * the change's classification (sync-classify.ts): `compatible` goes on
   * from the cursor, `rebuild`, or refused with its error (Rejected).
   */
  readonly definition:
    'same' | 'restamp' | 'compatible' | 'rebuild' | { readonly refused: { readonly reason: ReasonCode; readonly error: Error } };
  /** The cursor checked against the source (feed/cursor-check.ts). */
  readonly cursor:
    | {
        readonly status: 'ok';
        /** The cursor's seq, and the source's high-water mark read with it. */
        readonly seq: number;
        readonly hw: number;
        /** DDL sluice did not make ran since: the batch must prove its rows match the source. */
        readonly window: boolean;
        /** The table's journal columns are the compiled ones. */
        readonly journalMatches: boolean;
        /** Where the next bounded batch ends (not read for a range or a window). */
        readonly nextEnd?: number;
      }
    | { readonly status: 'error'; readonly message: string }
    | {
        readonly status: 'rebuild';
        readonly reason: ReasonCode;
        readonly message: string;
        readonly why?: string;
        readonly exclude?: readonly string[];
      };
}

export type StepFacts = RowFacts & CursorFacts;

export type StepDecision =
  /** Nothing to apply. `commit`: what the step wrote must commit (a Compatible definition stored, a stale build rolled back, a suspension whose cause is gone cleared). */
  | { readonly does: 'current'; readonly seq: number; readonly commit: boolean; readonly clears: boolean }
  /** Apply the events (from, to] and store the cursor at `to`; across a schema window, prove the rows first. */
  | { readonly does: 'apply'; readonly from: number; readonly to: number; readonly hw: number; readonly window: boolean }
  /**
   * Build from a snapshot: the first build (`over` false), or over the stored
   * projection, `protected` beside it in bounded steps (`resume`: one in
   * progress goes on) or in this one transaction.
   */
  | { readonly does: 'rebuild'; readonly reason?: string; readonly over: boolean; readonly protected: boolean; readonly resume: boolean }
  /** Suspend with `reason` (`stored`: the stored suspension stands, nothing to write). */
  | { readonly does: 'suspend'; readonly reason: ReasonCode; readonly detail: Record<string, unknown>; readonly stored: boolean }
  /** Refuse, writing nothing: a Rejected change (its reason and error), or a projection compiled against other journal columns (PROJECTION_OUTDATED). */
  | { readonly does: 'refuse'; readonly reason: ReasonCode; readonly error?: Error };

/** The decision for one step, from all the facts. */
export function decideStep(f: StepFacts): StepDecision {
  return decideFromRow(f) ?? decideFromCursor(f);
}

/** The decision the stored row makes alone, before the definition and the cursor are read; undefined when it leaves it to them. */
export function decideFromRow(f: RowFacts): StepDecision | undefined {
  const s = f.stored;
  if (s === undefined) return build(f, { over: false, protected: false, resume: false });
  // A protected rebuild in progress goes on (a reinit asked meanwhile too: the build is one).
  if (f.build === 'resumes') {
    const cannot = unbuildable(f);
    if (cannot !== undefined) return cannot;
    if (!f.table.columnsMatch) return { does: 'refuse', reason: 'PROJECTION_OUTDATED' };
    return { does: 'rebuild', over: true, protected: true, resume: true };
  }
  if (f.reinit) return rebuild(f, 'REINIT');
  // Never built (suspended before its first snapshot, or its first build failed): the build again,
  // so fixing the cause (say, re-enabling in images mode) is enough.
  if (!s.built) return build(f, { over: false, protected: false, resume: false });
  // Suspended because its stored definition did not compile, and this run's does: rebuilt from it, so that
  // the row stores the definition that compiled (a plain sync later uses it) and the rows are its.
  if (s.state === 'suspended' && BROKEN_DEFINITION_REASONS.has(s.reason ?? '')) return rebuild(f, 'DEFINITION_CHANGED');
  // (One suspended by a user's UNIQUE index waits to be tried again only once there is a batch to try: below.)
  if (f.gate === 'stands') return stored(s);
  return undefined;
}

/** The decision once the row leaves it to the definition and the cursor. */
export function decideFromCursor(f: StepFacts): StepDecision {
  const s = f.stored as StoredFacts;
  const d = f.definition;
  // A changed definition: a Compatible one goes on from the cursor (stored with this step), a Rejected one is refused, the rest rebuild.
  if (typeof d === 'object') return { does: 'refuse', reason: d.refused.reason, error: d.refused.error };
  if (d === 'rebuild') return rebuild(f, 'DEFINITION_CHANGED');
  const c = f.cursor;
  if (c.status === 'error') return suspend('CURSOR_MALFORMED', { message: c.message });
  if (c.status === 'rebuild') {
    const next = cursorBreak(f, c);
    return next.does === 'suspend' ? next : rebuild(f, next.reason);
  }
  if (!c.journalMatches) return { does: 'refuse', reason: 'PROJECTION_OUTDATED' };
  const lo = c.seq;
  // An explicit range is applied up to the high-water mark (what is applied already is left out); otherwise the next
  // bounded batch, or (across a schema window) everything to the high-water mark, which the proof compares at one seq.
  const to = f.range !== undefined ? Math.min(f.range.toSeq, c.hw) : c.window ? c.hw : (c.nextEnd ?? lo);
  const from = f.range !== undefined ? f.range.fromSeq : lo;
  if (f.gate === 'waits') return stored(s);
  if (to <= lo && !c.window) {
    // A suspension whose cause is gone, with nothing to apply: the row becomes active again, committed.
    if (s.state === 'suspended') return { does: 'current', seq: lo, commit: true, clears: true };
    return { does: 'current', seq: lo, commit: d === 'compatible' || f.build === 'stale', clears: false };
  }
  return { does: 'apply', from, to, hw: c.hw, window: c.window };
}

/** A rebuild of a built projection for `reason`: protected where its kind allows and no range was asked for. */
function rebuild(f: RowFacts, reason: string): StepDecision {
  const s = f.stored as StoredFacts;
  return build(f, { reason, over: true, protected: s.built && f.projection.shadow && f.range === undefined, resume: false });
}

function build(f: RowFacts, how: Omit<Extract<StepDecision, { does: 'rebuild' }>, 'does'>): StepDecision {
  return unbuildable(f) ?? { does: 'rebuild', ...how };
}

function stored(s: StoredFacts): StepDecision {
  return { does: 'suspend', reason: s.reason ?? 'SUSPENDED', detail: {}, stored: true };
}
