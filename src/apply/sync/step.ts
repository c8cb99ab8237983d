import type { Db } from '../../sqlite/connection.ts';
import { quoteIdent } from '../../sqlite/quote.ts';
import { writeTransaction } from '../../sqlite/transaction.ts';
import { reasonsOf } from '../../reasons.ts';
import { FailClosedError } from '../../errors.ts';
import { readState, type CapturedTable } from '../../capture/catalog.ts';
import { validateCursor } from '../../feed/cursor-check.ts';
import { cursorToken, readSourceView, type SourceView } from '../../feed/source-view.ts';
import { batchEnd } from '../../feed/batch.ts';
import { journalBatch, type ChangeBatch } from '../../feed/change-batch.ts';
import { sourceRows } from '../../feed/snapshot.ts';
import { definitionFingerprint, type CompiledProjection } from '../../projection/compile.ts';
import { dropTemps, kindOf } from '../../projection/kinds/registry.ts';
import { matchesSourceAt } from '../check/verify.ts';
import { readProjection, PROJECTIONS_TABLE, TARGET_INFO_TABLE, type ProjectionRecord } from '../target/target-meta.ts';
import {
  applyRows,
  commitBatch,
  replacedTables,
  positionBatch,
  recordSuspension,
  suspension,
  suspensionGate,
  SnapshotInstall,
  type ApplyTarget,
  type BatchEnd,
  type Suspension,
} from './applier.ts';
import { crashPoint } from './crash-points.ts';
import {
  dropShadow,
  readBuild,
  resumeOrRollbackShadowBuild,
  shadowBuildOf,
  startShadowBuild,
  writeBuild,
  type BuildState,
} from '../rebuild/shadow-build.ts';
import { buildStep } from '../rebuild/build-step.ts';
import { reportedSourceRows } from '../rebuild/snapshot-parts.ts';
import { BROKEN_DEFINITION_REASONS } from './broken-definition.ts';
import { storedIfCompatible } from '../evolution/sync-classify.ts';
import { columnsRead } from '../evolution/explain-facts.ts';
import { markBusy } from './retry.ts';
import { cachedStatement } from '../../sqlite/statement-cache.ts';
import { takeWriteLock } from '../../sqlite/write-lock.ts';
import type { StepOutcome } from './step-outcome.ts';
export type { StepOutcome } from './step-outcome.ts';

/*
 * sync's side of the applier: one target transaction for one projection,
 * reading its batch or snapshot from the journal and the source table on
 * the same connection (the source as main, the target attached). What is
 * sync's own is here: the cursor checked against the source (rebuilds,
 * schema windows), and the retry of a batch up to a committed state.
 */

/** Rebuild reasons that a fresh snapshot repairs (kind `rebuilt` in src/reasons.ts); the others need the source fixed first. */
const REBUILDABLE: ReadonlySet<string> = reasonsOf('rebuilt');

/** A batch that breaks a user's UNIQUE index is tried up to the high-water mark when that is at most this many batches (of the projection's table) ahead. */
const RETRY_SPAN = 10;

export interface StepContext {
  readonly db: Db;
  readonly schema: string;
  readonly sourcePath: string;
  readonly batchSize: number;
  /**
   * An explicit batch (fromSeq, toSeq]: already applied is a no-op, an
   * overlap applies only the part after the stored cursor, a gap (fromSeq
   * after the stored cursor) is an error.
   */
  readonly range?: { readonly fromSeq: number; readonly toSeq: number };
  /** Rebuild from a snapshot whatever the stored state (reason REINIT). */
  readonly reinit?: boolean;
  /** The validation of a protected rebuild's shadow caught up to `seq` (the step after a `validate` outcome). */
  readonly validated?: { readonly seq: number; readonly ok: boolean };
  /**
   * Called once the target's write lock is held, before anything is read or
   * written: a suspension it returns (a projection another program edited:
   * target-edits.ts) ends the step, rolled back, and is recorded. `rebuilds`:
   * this step rebuilds the projection whatever its rows (a reinit).
   */
  readonly afterLock?: (p: CompiledProjection, rebuilds: boolean) => Suspension | undefined;
  /** Called just before the step's transaction commits (a protected target's guards on tables it made: protect.ts). */
  readonly beforeCommit?: (p: CompiledProjection) => void;
  /**
   * Someone shows progress (a bar, a JSON log, a follower's summaries): an
   * applied batch counts its source events, and a snapshot reports its rows
   * as it reads them, of the source table's count (each costs a query).
   */
  readonly progress?: StepProgress;
}

/** What a step tells of its progress while it runs (StepContext.progress). */
export interface StepProgress {
  /**
   * What the step read before doing anything: the projection's stored seq
   * (0 when it has no row) and the source's high-water mark, in its
   * transaction (so a run's progress needs no reads of its own).
   */
  begin(seq: number, sourceSeq: number): void;
  /** `rows` of the `total` source rows a snapshot in this step has read so far: after each part, and once at the end. */
  snapshotRows(rows: number, total: number): void;
}

/**
 * Runs one target transaction for one projection: initialize (snapshot and
 * cursor together), rebuild, or apply the next bounded batch with its
 * cursor. A suspension rolls everything back, then is recorded in its own
 * transaction.
 */
export async function step(ctx: StepContext, p: CompiledProjection): Promise<StepOutcome> {
  const { db, schema } = ctx;
  const target: ApplyTarget = { db, schema, sourceId: '', sourcePath: ctx.sourcePath };
  let sourceId = '';
  try {
    const out = await writeTransaction(
      db,
      async () => {
        // Take the target's write lock before reading it, so the target is read at its latest state.
        try {
          await takeWriteLock(db, () => {
            cachedStatement(db, `UPDATE ${quoteIdent(schema)}.${TARGET_INFO_TABLE} SET id = id`).run();
          });
        } catch (err) {
          markBusy(err, 'target');
          throw err;
        }
        // The source's capture state, arming and high-water mark, read once for the whole step; its
        // sourceId goes into what the step records. One that cannot be read fails the step after the
        // check for edits, as it did when only the state row was read here.
        let view: SourceView | undefined;
        let unreadable: unknown;
        try {
          view = readSourceView(db);
        } catch (err) {
          unreadable = err;
        }
        sourceId = view?.state.sourceId ?? readState(db)?.sourceId ?? '';
        const edited = ctx.afterLock?.(p, ctx.reinit === true);
        if (edited !== undefined) return edited;
        if (view === undefined) throw unreadable;
        return stepInTransaction(ctx, { ...target, sourceId }, p, readProjection(db, schema, p.name), view);
      },
      {
        keep: (o) => o.kind !== 'suspended' && o.kind !== 'current' && o.kind !== 'validate',
        // The failed transaction may have made work tables.
        onRollback: () => dropTemps(db),
        beforeCommit: () => {
          ctx.beforeCommit?.(p);
          crashPoint('before-commit');
        },
        afterCommit: () => crashPoint('after-commit'),
      },
    );
    if (out.kind === 'suspended') await recordSuspension({ ...target, sourceId }, p, out);
    return out;
  } catch (err) {
    // With the target's write lock held, a busy file is the source (a writer's lock on a rollback-journal source).
    markBusy(err, 'source');
    // Recorded by the caller that gives up on it (Syncer.runOnce), not here:
    // a busy target is retried, and an applier verdict (BATCH_GAP, ...) must
    // leave the target untouched.
    throw err;
  }
}

async function stepInTransaction(
  ctx: StepContext,
  target: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord | undefined,
  view: SourceView,
): Promise<StepOutcome> {
  ctx.progress?.begin(rec?.seq ?? 0, view.hw);
  if (rec === undefined) return initialize(target, p, view, undefined, undefined, ctx.progress);
  // A protected rebuild in progress goes on, or is rolled back (then what it wrote must commit).
  const found = readBuild(rec) !== undefined;
  const build = rec.cursor === null ? undefined : resumeOrRollbackShadowBuild(target, p, rec, view.state.prunedThrough);
  if (build !== undefined) return continueBuild(ctx, target, p, rec, view, build);
  const out = await afterBuildCheck(ctx, target, p, rec, view);
  return found && out.kind === 'current' ? { kind: 'applied', events: 0, seq: out.seq, cursor: out.cursor, caughtUp: true } : out;
}

async function afterBuildCheck(
  ctx: StepContext,
  target: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord,
  view: SourceView,
): Promise<StepOutcome> {
  const { db } = ctx;
  if (ctx.reinit === true) return rebuild(ctx, target, p, view, rec, 'REINIT');
  // Never built (suspended before its first snapshot, or its first build failed): try the build again,
  // so fixing the cause (say, re-enabling in images mode) is enough.
  if (rec.cursor === null) return initialize(target, p, view, undefined, undefined, ctx.progress);
  // Suspended because its stored definition did not compile, and this run's does: rebuilt from it, so that
  // the row stores the definition that compiled (a plain sync later uses it) and the rows are its.
  if (rec.state === 'suspended' && BROKEN_DEFINITION_REASONS.has(rec.reason ?? ''))
    return rebuild(ctx, target, p, view, rec, 'DEFINITION_CHANGED');
  // Once the table is armed again, in images mode, the cursor check below
  // decides between continuing and rebuilding; once a user's index is gone,
  // the batch applies.
  // (One suspended by a user's UNIQUE index waits to be tried again only once there is a batch to try.)
  const gate = suspensionGate(target, p, rec, ctx.range !== undefined);
  if (gate !== undefined && rec.reason !== 'TARGET_CONSTRAINT') return gate;
  // A changed definition is classified as explain classifies it (sync-classify.ts): a Compatible one is
  // stored and goes on from the cursor, a Rejected one is refused (it throws, nothing written), the rest rebuild.
  // (Stored by a version whose fingerprint covered the whole source shape: the same definition over
  // the same shape is the same projection (rows, keys, cursor), so only the fingerprint is stamped anew.)
  const changed = rec.fingerprint !== p.fingerprint && !restampedLegacyFingerprint(target, p, rec);
  const compatible = changed && storedIfCompatible(target, p, rec, view);
  if (changed && !compatible) return rebuild(ctx, target, p, view, rec, 'DEFINITION_CHANGED');
  // After DDL sluice did not make, a projection verify can check proves its
  // continuity (below); any other rebuilds (SCHEMA_WINDOW).
  const provable = kindOf(p).verification !== undefined && ctx.range === undefined;
  const v = validateCursor(db, rec.cursor ?? '', view, {
    allowSchemaWindow: provable,
    acceptAlters: provable,
    reads: columnsRead(undefined, p),
  });
  if (v.status === 'error') return suspension('CURSOR_MALFORMED', { message: v.message });
  if (v.status === 'rebuild') {
    if (REBUILDABLE.has(v.reason)) return rebuild(ctx, target, p, view, rec, v.reason);
    const why = v.detail?.reason;
    return suspension(v.reason, {
      table: p.source.table,
      ...(typeof why === 'string' ? { why } : {}),
      message: v.message,
    });
  }
  const t = v.tables[0] as CapturedTable;
  checkJournalLayout(p, t);
  const lo = v.cursor.seq;
  // The proof compares the whole projection with the source at one seq: the
  // high-water mark read in this transaction, so the backlog is one batch.
  let batch: ChangeBatch | undefined;
  if (ctx.range !== undefined) {
    const hi = Math.min(ctx.range.toSeq, v.view.hw);
    batch = positionBatch(p, lo, journalBatch(db, t, ctx.range.fromSeq, hi), 'the batch');
  } else {
    const hi = v.window === true ? v.view.hw : batchEnd(db, t.tid, lo, v.view.hw, ctx.batchSize);
    batch = hi > lo || v.window === true ? journalBatch(db, t, lo, hi) : undefined;
  }
  if (batch === undefined || (batch.toSeq <= lo && v.window !== true)) {
    // A suspension whose cause is gone, with nothing to apply: the row becomes active again, committed.
    // (A Compatible change stored above must commit: 'current' rolls back.)
    if (rec.state !== 'suspended' || gate !== undefined)
      return (
        gate ??
        (compatible
          ? { kind: 'applied', events: 0, seq: lo, cursor: rec.cursor ?? '', caughtUp: true }
          : { kind: 'current', seq: lo, cursor: rec.cursor ?? '' })
      );
    commitBatch(target, p, rec.cursor ?? '', lo, { kind: 'rows', applied: 0, lastTs: null });
    return { kind: 'applied', events: 0, seq: lo, cursor: rec.cursor ?? '', caughtUp: true };
  }
  if (gate !== undefined) return gate;
  const end: BatchEnd = ctx.range !== undefined ? 'range' : batch.toSeq >= v.view.hw ? 'committed' : 'batch';
  let r = await applyRows(target, p, batch, end);
  // Intermediate batches need not reproduce source transactions: a batch
  // boundary may cut one, and in between a UNIQUE index a user added to the
  // target can be broken although no committed state of the source breaks
  // it. Such a batch is tried once more up to the high-water mark (a
  // committed state) before the projection is suspended, when that is
  // within RETRY_SPAN batches (a larger backlog is not made one batch).
  if (
    r.kind === 'suspended' &&
    r.reason === 'TARGET_CONSTRAINT' &&
    kindOf(p).foreignUnique === 'guard' &&
    batch.toSeq < v.view.hw &&
    ctx.range === undefined &&
    journalBatch(db, t, lo, v.view.hw).atMost(RETRY_SPAN * ctx.batchSize)
  ) {
    batch = journalBatch(db, t, lo, v.view.hw);
    r = await applyRows(target, p, batch, 'committed');
  }
  // Across a schema window, a backlog that does not apply (a user trigger
  // made and dropped around a write journals out of order) says the same
  // as a failed proof: the history is not whole. Rebuild, not suspend.
  if (v.window === true && r.kind === 'suspended' && (r.reason === 'TARGET_DIVERGED' || r.reason === 'UNCAPTURED_REPLACE'))
    return initialize(target, p, view, rec, 'SCHEMA_WINDOW', ctx.progress);
  if (r.kind === 'suspended') return r;
  const hi = batch.toSeq;
  // A copy that differs from its source after a schema window is rebuilt
  // (the batch applied above goes with its tables); one that matches goes on,
  // and its new cursor carries the current schema version.
  if (v.window === true && !matchesSourceAt(db, rec, hi, t.tid)) return initialize(target, p, view, rec, 'SCHEMA_WINDOW', ctx.progress);
  const cursor = cursorToken(db, v.view, v.tables, hi);
  commitBatch(target, p, cursor, hi, r);
  return {
    kind: 'applied',
    events: r.applied,
    seq: hi,
    cursor,
    caughtUp: hi >= v.view.hw,
    ...(ctx.progress === undefined ? {} : { sourceEvents: batch.count() }),
  };
}

/**
 * The set-based apply paths read a journal row's images by position, from
 * the columns the projection was compiled against. A projection compiled
 * before `sluice alter` changed its table in place (a `sync --follow`
 * started before it) would read the new layout with the old positions:
 * wrong values, or a spurious suspension. So the columns the table is armed
 * with must be the compiled ones.
 */
function checkJournalLayout(p: CompiledProjection, t: CapturedTable): void {
  const compiled = p.source.columns;
  if (compiled.length === t.columns.length && compiled.every((c, i) => c.name === t.columns[i])) return;
  throw new FailClosedError(
    'PROJECTION_OUTDATED',
    `Projection ${p.name} was compiled against the columns of ${p.source.table} as they were when this sync started (${compiled.map((c) => c.name).join(', ')}), but its capture now journals ${t.columns.join(', ')} (sluice alter or a re-arm changed the table since). Nothing of this batch was applied. The next run (a sync --follow's next pass) compiles the projection against the table as it is now and goes on from its cursor.`,
    { projection: p.name, table: p.source.table },
  );
}

/**
 * Whether `rec` was fingerprinted by the older scheme (the whole source
 * shape) for exactly this definition and shape; then its fingerprint is
 * replaced by today's, in this transaction.
 */
function restampedLegacyFingerprint(target: ApplyTarget, p: CompiledProjection, rec: ProjectionRecord): boolean {
  if (rec.fingerprint !== definitionFingerprint(p.definition, p.source, undefined)) return false;
  if (rec.sourceShape !== JSON.stringify(p.source)) return false;
  cachedStatement(target.db, `UPDATE ${quoteIdent(target.schema)}.${PROJECTIONS_TABLE} SET fingerprint = ? WHERE name = ?`).run(
    p.fingerprint,
    p.name,
  );
  return true;
}

/** Where a (re)build reads: the projection's table, captured, armed and (for a kind that reads before-images) in images mode. */
function buildable(view: SourceView, p: CompiledProjection): CapturedTable | Suspension {
  const a = view.tables.get(p.source.table);
  const table = a?.table;
  if (table === undefined || a === undefined) return suspension('TABLE_UNTRACKED', { table: p.source.table });
  if (!a.armed) return suspension('TABLE_UNARMED', { table: p.source.table, why: a.reason });
  if (table.mode !== 'images' && kindOf(p).needsImages) return suspension('NEEDS_IMAGES_MODE', { table: p.source.table, mode: table.mode });
  return table;
}

/**
 * Rebuilds a live projection: a protected rebuild in bounded steps beside
 * it where its kind allows (shadow-build.ts), else in this one transaction.
 */
async function rebuild(
  ctx: StepContext,
  target: ApplyTarget,
  p: CompiledProjection,
  view: SourceView,
  rec: ProjectionRecord,
  reason: string,
): Promise<StepOutcome> {
  if (rec.cursor === null || shadowBuildOf(p) === undefined || ctx.range !== undefined)
    return initialize(target, p, view, rec, reason, ctx.progress);
  const table = buildable(view, p);
  if ('kind' in table) return table;
  // The intent and the empty shadow tables in a step of their own: their DDL makes the connection prepare its statements again.
  startShadowBuild(target, p, view, reason, replacedTables(rec, p));
  return { kind: 'building', phase: 'copy', rows: 0, seq: rec.seq };
}

/** One bounded step of a protected rebuild (build-step.ts); a discarded shadow is rebuilt in this one transaction instead. */
async function continueBuild(
  ctx: StepContext,
  target: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord,
  view: SourceView,
  b: BuildState,
): Promise<StepOutcome> {
  const table = buildable(view, p);
  if ('kind' in table) return table;
  checkJournalLayout(p, table);
  const out = await buildStep(target, p, rec, view, table, b, ctx.validated);
  if (out !== 'discard') return out;
  dropShadow(target, b);
  writeBuild(target, p.name, null);
  return initialize(target, p, view, rec, b.reason, ctx.progress);
}

/**
 * Builds the projection from the source table as it is now, with the cursor
 * at the high-water mark read in this transaction; the rows read are told
 * to `progress` as they go (of the table's count), when it is there.
 */
async function initialize(
  target: ApplyTarget,
  p: CompiledProjection,
  view: SourceView,
  rec: ProjectionRecord | undefined,
  reason: string | undefined,
  progress: StepProgress | undefined,
): Promise<StepOutcome> {
  const { db } = target;
  const table = buildable(view, p);
  if ('kind' in table) return table;
  const install = SnapshotInstall.begin(target, p, rec);
  await install.add(
    progress === undefined ? sourceRows(db, table) : reportedSourceRows(db, p, table, (rows, total) => progress.snapshotRows(rows, total)),
  );
  const cursor = cursorToken(db, view, [table], view.hw);
  const { rows, droppedIndexes } = await install.finish(cursor, view.hw);
  return {
    kind: 'initialized',
    rows,
    seq: view.hw,
    cursor,
    ...(reason === undefined ? {} : { reason }),
    ...(droppedIndexes.length === 0 ? {} : { droppedIndexes }),
  };
}
