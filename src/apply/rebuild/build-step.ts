import type { Db } from '../../sqlite/index.ts';
import type { CapturedTable } from '../../capture/index.ts';
import type { SourceView } from '../../feed/index.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { readProjection, type ProjectionRecord } from '../target/index.ts';
import { validateCursor, readSourceView } from '../../feed/index.ts';
import { withReadTransaction } from '../../sqlite/index.ts';
import { shadowMatchesSource } from '../check/index.ts';
import { replacedTables, sourceAffinityGate, type ApplyTarget } from '../projections/index.ts';
import {
  atomicSwapShadow,
  buildCursor,
  copyTarget,
  startShadowBuild,
  validationCandidate,
  writeBuild,
  type BuildCandidate,
  type BuildState,
} from './shadow-build.ts';
import { catchUp, catchUpEnd, copyChunk, fillChunk, replayEvents, stagedCopyHolds } from './shadow-fill.ts';
import type { StepOutcome } from '../projections/index.ts';

/**
 * A protected rebuild's copy is caught up to the build's seq: it is
 * validated against the source (validateShadow) in a read transaction of
 * its own, with no lock held, and the step that asked goes on with the
 * result (step.ts, before it returns). Nothing was written.
 */
export interface ValidationNeeded {
  readonly kind: 'validate';
  readonly build: BuildState;
  readonly tid: number;
  readonly candidate: BuildCandidate;
}

/**
 * What a syncer that watches the target's log (apply/edits/target-watch.ts)
 * knows of a protected rebuild. Each chunk of the copy is the source's rows
 * as read in the chunk's own transaction (INSERT ... SELECT, as a plain
 * snapshot copies them), and each catch-up reads again, in its transaction,
 * every key the journal touched since: while the journal is the source's
 * whole history (the build's cursor is checked in each step, and a bump, a
 * re-armed table or DDL sluice did not make starts the build again), the
 * copy differs from the source only where another program wrote the copy
 * itself. The validation's pass over every row is there for that: it is
 * left out when the watch vouches that no other program wrote the build's
 * tables since the build started.
 */
export interface BuildWatch {
  /** A build of projection `name` started in this transaction, with this token (BuildState.token). */
  started(name: string, token: string): void;
  /**
   * Whether the build of `name` with this token was started by this syncer
   * and the watch has seen no other program write its tables since (asked
   * with the target's lock held, after the watch read the log up to it).
   */
  vouched(name: string, token: string | undefined): boolean;
}

/** What a validation found: the copy at `seq` is exactly the source's rows (`ok`), or not. */
export interface Validated {
  readonly seq: number;
  readonly ok: boolean;
}

/** Whether a protected rebuild's copy holds exactly the source's rows (verify's checksums, in one read transaction). */
export function validateShadow(db: Db, schema: string, p: CompiledProjection, v: ValidationNeeded): Validated {
  const ok = withReadTransaction(db, () => {
    const rec = readProjection(db, schema, p.name);
    if (rec === undefined) return false;
    return shadowMatchesSource(db, { ...rec, kind: v.candidate.kind }, v.candidate, readSourceView(db).hw, v.tid).ok;
  });
  return { seq: v.build.caughtSeq, ok };
}

/**
 * One bounded step of a protected rebuild (shadow-build.ts says which),
 * in the caller's target transaction: copy a chunk, catch up a range, ask
 * for the validation, fill a part, replay a range, or the swap.
 * `discard`: the copy failed its validation, the journal's events do not
 * apply to the shadow, or a staged copy cannot hold the source's rows: the
 * caller drops it and rebuilds in one transaction.
 */
export async function buildStep(
  t: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord,
  view: SourceView,
  table: CapturedTable,
  b: BuildState,
  validated: Validated | undefined,
  watch?: BuildWatch,
): Promise<StepOutcome | ValidationNeeded | 'discard'> {
  const building = (phase: 'copy' | 'catch-up' | 'fill' | 'replay', next: BuildState): StepOutcome => {
    writeBuild(t, p.name, { ...next, cursor: buildCursor(t, view, p, next.fill?.seq ?? next.caughtSeq) });
    return { kind: 'building', phase, rows: next.copied, seq: rec.seq };
  };
  // A staged copy that cannot hold the source's rows: rebuilt in one transaction instead.
  if (b.staging !== undefined && !stagedCopyHolds(t.db, p)) return 'discard';
  // What the build copied, caught up and replayed is the source's rows only while the journal since is its
  // whole history: after a bump, a re-armed table or DDL sluice did not make, it starts again from the source.
  if (b.cursor === undefined || validateCursor(t.db, b.cursor, view).status !== 'ok') {
    // (A declaration changed in place since is checked as a new build's is: step.ts.)
    const misfit = sourceAffinityGate(t.db, p, rec);
    if (misfit !== undefined) return misfit;
    const again = startShadowBuild(t, p, view, b.reason, replacedTables(rec, p));
    if (again.token !== undefined) watch?.started(p.name, again.token);
    return building('copy', await copyChunk(t, copyTarget(p, again), table, again));
  }
  const fill = b.fill;
  if (fill === undefined) {
    const copy = copyTarget(p, b);
    if (b.lastKey !== undefined) return building('copy', await copyChunk(t, copy, table, b));
    // Validated at its seq: on to the last catch-up below, however many events came in meanwhile (a bounded
    // catch-up first would move its seq, and call for another validation, and so on for as long as a steady
    // writer outpaces a validation).
    if (validated?.seq !== b.caughtSeq) {
      const hi = catchUpEnd(t.db, table, b.caughtSeq, view.hw);
      if (hi < view.hw) {
        await catchUp(t, copy.p, table, copy.at, b.caughtSeq, hi);
        return building('catch-up', { ...b, caughtSeq: hi });
      }
      // Vouched for (BuildWatch): the copy is as this syncer wrote it, and needs no pass over every row.
      if (watch?.vouched(p.name, b.token) !== true)
        return { kind: 'validate', build: b, tid: table.tid, candidate: validationCandidate(p, b) };
    } else if (!validated.ok) return 'discard'; // A copy that is not the source's rows (another program wrote it, or the source, unjournaled).
    // The copy is the source's rows at the validated seq, but for the keys touched since: read again, in this
    // transaction, it is the source's rows at the high-water mark read in it.
    await catchUp(t, copy.p, table, copy.at, b.caughtSeq, view.hw);
    if (b.staging !== undefined) return building('fill', { ...b, caughtSeq: view.hw, fill: { lastKey: null, seq: view.hw } });
  } else {
    if (fill.lastKey !== undefined) return building('fill', await fillChunk(t, p, b));
    const hi = catchUpEnd(t.db, table, fill.seq, view.hw);
    if ((await replayEvents(t, p, table, b.shadow, fill.seq, hi)) !== undefined) return 'discard';
    if (hi < view.hw) return building('replay', { ...b, fill: { seq: hi } });
  }
  const { cursor, droppedIndexes, droppedTriggers } = atomicSwapShadow(t, p, rec, b, view, table);
  return {
    kind: 'initialized',
    rows: b.copied,
    seq: view.hw,
    cursor,
    reason: b.reason,
    swapped: true,
    ...(droppedIndexes.length === 0 ? {} : { droppedIndexes }),
    ...(droppedTriggers.length === 0 ? {} : { droppedTriggers }),
  };
}
