import type { Db } from '../../sqlite/index.ts';
import { quoteIdent, writeTransaction, cachedStatement } from '../../sqlite/index.ts';
import { FailClosedError } from '../../errors.ts';
import { readState, type CapturedTable } from '../../capture/index.ts';
import type { CursorValidation } from '../../feed/index.ts';
import { cursorToken, readSourceView, type SourceView, journalBatch, sourceRows } from '../../feed/index.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { dropTemps } from '../../projection/index.ts';
import { matchesSourceAt, missingTable, tableShapeProblem } from '../check/index.ts';
import { readProjection, PROJECTIONS_TABLE, lockTarget, type ProjectionRecord, readBuild, markBusy, retryBusy } from '../target/index.ts';
import {
  commitBatch,
  recordSuspension,
  replacedTables,
  storedSuspension,
  suspension,
  SnapshotInstall,
  type ApplyTarget,
  type Suspension,
  sourceAffinityGate,
  unbuildable,
} from '../projections/index.ts';
import { runBatchPath } from './batch-path.ts';
import { decideFromCursor, decideFromRow, type StepDecision } from './step-decision.ts';
import { buildFacts, cursorFacts, ownTable, rowFacts, type StepPlace } from './step-facts.ts';
import { crashPoint } from './crash-points.ts';
import {
  dropShadow,
  resumeOrRollbackShadowBuild,
  startShadowBuild,
  writeBuild,
  type BuildState,
  buildStep,
  validateShadow,
  type Validated,
  type ValidationNeeded,
  type BuildWatch,
  reportedSourceRows,
} from '../rebuild/index.ts';
import { storeDefinition } from '../evolution/index.ts';
import type { StepOutcome } from '../projections/index.ts';
export type { StepOutcome } from '../projections/index.ts';

/*
 * sync's side of the applier: one step for one projection, in one target
 * transaction that reads its batch or snapshot from the journal and the
 * source table on the same connection (the source as main, the target
 * attached). The step first gathers the facts and decides what to do
 * (step-decision.ts, pure: current, apply, rebuild, suspend or refuse), then
 * does it: the batch through the one batch path (batch-path.ts, which import
 * takes too), a rebuild through apply/rebuild/. What is sync's own is here:
 * the cursor checked against the source (rebuilds, schema windows), and the
 * retry of a batch up to a committed state.
 */

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
  /**
   * Each transaction of the step is tried again while the target or the
   * source is busy, up to `timeoutMs` (retry.ts retryBusy, which names the
   * file past it); absent, a busy file throws at once.
   */
  readonly busy?: { readonly timeoutMs: number; readonly files: { readonly source: string; readonly target: string } };
  /**
   * Called once the target's write lock is held, before anything is read or
   * written: a suspension it returns (a projection another program edited:
   * target-edits.ts) ends the step, rolled back, and is recorded. `rebuilds`:
   * this step rebuilds the projection whatever its rows (a reinit).
   */
  readonly afterLock?: (p: CompiledProjection, rebuilds: boolean) => Suspension | undefined;
  /**
   * What the caller's watch of the target's log knows of a protected
   * rebuild's tables (build-step.ts): a build it vouches for needs no
   * validation pass. Absent: every build is validated.
   */
  readonly buildWatch?: BuildWatch;
  /** Called just before the step's transaction commits (a protected target's guards on tables it made: protect.ts). */
  readonly beforeCommit?: (p: CompiledProjection) => void;
  /**
   * Called between two target transactions of one step (a protected
   * rebuild's validation runs between them): what the caller does between
   * its steps (Syncer: the watch of hand edits, the check that the target is
   * still its file). A throw ends the step there.
   */
  readonly between?: () => void;
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
  /**
   * `rows` of the `total` source rows a snapshot in this step has read so
   * far: after each part, and once at the end; or, when only its start is
   * told (`rows` false), once before it, with no total.
   */
  snapshotRows(rows: number, total?: number): void;
  /** False: only a snapshot's start is told (SyncOptions.snapshotProgress 'start'), and it copies the table whole. */
  readonly rows?: boolean;
  /** A protected rebuild's copy was validated at `seq` (between the step's two transactions, with no lock held). */
  validated?(seq: number, ok: boolean): void;
}

/**
 * Runs one step for one projection: initialize (snapshot and cursor
 * together), rebuild (or one bounded step of a protected rebuild), or apply
 * the next bounded batch with its cursor, each in one target transaction. A
 * suspension rolls everything back, then is recorded in its own
 * transaction. A protected rebuild's copy that is caught up is validated in
 * a read transaction of its own (no lock held), and the step goes on with
 * the result in a second target transaction: the caller gets the outcome.
 */
export async function step(ctx: StepContext, p: CompiledProjection): Promise<StepOutcome> {
  let out = await attempt(ctx, p, undefined);
  // (A reinit is the first transaction's only.)
  const next: StepContext = { ...ctx, reinit: false };
  while (out.kind === 'validate') {
    const validated = validateShadow(ctx.db, ctx.schema, p, out);
    ctx.progress?.validated?.(validated.seq, validated.ok);
    ctx.between?.();
    out = await attempt(next, p, validated);
  }
  return out;
}

/** One target transaction of the step, tried again while a file is busy (StepContext.busy). */
function attempt(ctx: StepContext, p: CompiledProjection, validated: Validated | undefined): Promise<StepOutcome | ValidationNeeded> {
  const run = () => inTargetTransaction(ctx, p, validated);
  return ctx.busy === undefined ? run() : retryBusy(run, ctx.busy.timeoutMs, ctx.busy.files);
}

async function inTargetTransaction(
  ctx: StepContext,
  p: CompiledProjection,
  validated: Validated | undefined,
): Promise<StepOutcome | ValidationNeeded> {
  const { db, schema } = ctx;
  const target: ApplyTarget = { db, schema, sourceId: '', sourcePath: ctx.sourcePath };
  let sourceId = '';
  try {
    const out = await writeTransaction(
      db,
      async (): Promise<StepOutcome | ValidationNeeded> => {
        // Take the target's write lock before reading it, so the target is read at its latest state.
        await lockTarget(db, schema);
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
        return decideAndDo(ctx, { ...target, sourceId }, p, readProjection(db, schema, p.name), view, validated);
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

/** Where the step stands in its transaction, with its context: what it read, for doing what it decides. */
interface Here extends StepPlace {
  readonly ctx: StepContext;
}

/**
 * Gathers the facts, decides (step-decision.ts) and does it. The stored row
 * decides first; only when it leaves the decision to them are the
 * definition classified and the cursor checked.
 */
async function decideAndDo(
  ctx: StepContext,
  target: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord | undefined,
  view: SourceView,
  validated: Validated | undefined,
): Promise<StepOutcome | ValidationNeeded> {
  ctx.progress?.begin(rec?.seq ?? 0, view.hw);
  const here: Here = { ctx, target, p, rec, view, reinit: ctx.reinit === true, range: ctx.range, batchSize: ctx.batchSize };
  // A protected rebuild in progress goes on, or, when it no longer fits, is rolled back first whatever is
  // decided (the live projection was never touched); what that wrote then commits.
  const found = rec?.cursor != null && readBuild(rec) !== undefined;
  const build = rec?.cursor == null ? undefined : resumeOrRollbackShadowBuild(target, p, rec, view.state.prunedThrough);
  const row = rowFacts(here, build !== undefined ? 'resumes' : found ? 'stale' : 'none');
  const early = decideFromRow(row);
  if (early !== undefined) return carryOut(here, early, build, validated, undefined);
  const stored = rec as ProjectionRecord;
  const { facts, checked } = cursorFacts(here, stored);
  // The same projection under an older fingerprint gets today's; a Compatible definition is stored: in this
  // transaction, which commits with a batch or a cleared suspension, and rolls back otherwise.
  if (facts.definition === 'restamp') restampFingerprint(target, p);
  if (facts.definition === 'compatible') storeDefinition(target, p);
  return carryOut(here, decideFromCursor({ ...row, ...facts }), build, validated, checked);
}

/** Does what was decided. */
async function carryOut(
  here: Here,
  d: StepDecision,
  build: BuildState | undefined,
  validated: Validated | undefined,
  checked: CursorValidation | undefined,
): Promise<StepOutcome | ValidationNeeded> {
  const { target, p, rec, view } = here;
  switch (d.does) {
    case 'suspend':
      return d.stored ? storedSuspension(rec as ProjectionRecord) : suspension(d.reason, d.detail);
    case 'refuse':
      throw d.error ?? outdated(p, buildableTable(here, checked));
    case 'rebuild': {
      if (d.resume) return continueBuild(here, rec as ProjectionRecord, build as BuildState, validated);
      if (!d.protected) return initialize(here, d.over ? rec : undefined, d.reason);
      // A column declared anew in place may hold values a copy cannot keep as they are: the projection keeps its rows.
      const misfit = sourceAffinityGate(target.db, p, rec as ProjectionRecord);
      if (misfit !== undefined) return misfit;
      // The intent and the empty shadow tables in a step of their own: their DDL makes the connection prepare its statements again.
      const started = startShadowBuild(target, p, view, d.reason as string, replacedTables(rec, p));
      if (started.token !== undefined) here.ctx.buildWatch?.started(p.name, started.token);
      return { kind: 'building', phase: 'copy', rows: 0, seq: (rec as ProjectionRecord).seq };
    }
    case 'current': {
      // Nothing to apply, and its tables held to health's rule all the same (as a batch would meet it: batch-path.ts), or a
      // table dropped, renamed away or reshaped by hand while the source was idle was reported current (exit 0). Cached per
      // schema_version of the target (target-shape.ts): one PRAGMA while nothing changed.
      const missing = missingTable(target.db, target.schema, p);
      // Failed as a batch fails on it ("no such table": the caller records TARGET_TABLE_CHANGED with health's repair).
      if (missing !== undefined) throw new Error(`table ${missing} of projection ${p.name} is missing from the target`);
      const changed = tableShapeProblem(target.db, target.schema, p);
      if (changed !== undefined) return suspension('TARGET_TABLE_CHANGED', { ...changed });
      const cursor = rec?.cursor ?? '';
      // A suspension whose cause is gone, with nothing to apply: the row becomes active again.
      if (d.clears) commitBatch(target, p, cursor, d.seq, { kind: 'rows', applied: 0, lastTs: null });
      // ('current' rolls back: what must commit is an empty batch applied.)
      return d.commit ? { kind: 'applied', events: 0, seq: d.seq, cursor, caughtUp: true } : { kind: 'current', seq: d.seq, cursor };
    }
    case 'apply':
      return applyNext(here, d, checked as Extract<CursorValidation, { status: 'ok' }>);
  }
}

/** The batch (from, to] through the batch path, with its cursor; across a schema window, proved against the source first. */
async function applyNext(
  here: Here,
  d: Extract<StepDecision, { does: 'apply' }>,
  v: Extract<CursorValidation, { status: 'ok' }>,
): Promise<StepOutcome> {
  const { ctx, target, p } = here;
  const rec = here.rec as ProjectionRecord;
  const { db } = ctx;
  const t = ownTable(v, p);
  const lo = v.cursor.seq;
  const hw = d.hw;
  const out = await runBatchPath(target, p, rec, lo, {
    batch: () => journalBatch(db, t, d.from, d.to),
    explicit: ctx.range !== undefined,
    what: 'the batch',
    end: ctx.range !== undefined ? 'range' : d.to >= hw ? 'committed' : 'batch',
    // Over its own table only, whatever else the cursor it goes on from listed (an import's, a subscriber's).
    cursor: (seq) => cursorToken(db, v.view, [t], seq),
    // Up to the high-water mark (a committed state), when that is within RETRY_SPAN batches (a larger backlog is not made one batch).
    wider: (b) =>
      b.toSeq < hw && ctx.range === undefined && journalBatch(db, t, lo, hw).atMost(RETRY_SPAN * ctx.batchSize)
        ? journalBatch(db, t, lo, hw)
        : undefined,
    // Across a schema window, a backlog that does not apply (a user trigger made and dropped around a write
    // journals out of order), or a copy that then differs from its source, says the history is not whole:
    // rebuilt, not suspended. One that matches goes on, and its new cursor carries the current schema version.
    ...(d.window ? { proves: (seq: number) => matchesSourceAt(db, rec, seq, t.tid) } : {}),
  });
  switch (out.kind) {
    case 'held':
      return out.suspension;
    case 'none':
      return { kind: 'current', seq: lo, cursor: rec.cursor ?? '' };
    case 'suspended':
      return out;
    case 'unproved':
      return initialize(here, rec, 'SCHEMA_WINDOW');
    case 'committed':
      return {
        kind: 'applied',
        events: out.rows.applied,
        seq: out.seq,
        cursor: out.cursor,
        caughtUp: out.seq >= hw,
        ...(ctx.progress === undefined ? {} : { sourceEvents: out.batch.count() }),
      };
  }
}

/** The source table a build or a batch reads, for a PROJECTION_OUTDATED refusal: the cursor's, else the source view's. */
function buildableTable(here: Here, checked: CursorValidation | undefined): CapturedTable {
  if (checked?.status === 'ok') return ownTable(checked, here.p);
  return here.view.tables.get(here.p.source.table)?.table as CapturedTable;
}

function outdated(p: CompiledProjection, t: CapturedTable): FailClosedError {
  const compiled = p.source.columns;
  return new FailClosedError(
    'PROJECTION_OUTDATED',
    `Projection ${p.name} was compiled against the columns of ${p.source.table} as they were when this sync started (${compiled.map((c) => c.name).join(', ')}), but its capture now journals ${t.columns.join(', ')} (sluice alter or a re-arm changed the table since). Nothing of this batch was applied. The next run (a sync --follow's next pass) compiles the projection against the table as it is now and goes on from its cursor.`,
    { projection: p.name, table: p.source.table },
  );
}

/** Replaces an older scheme's fingerprint by today's, in this transaction. */
function restampFingerprint(target: ApplyTarget, p: CompiledProjection): void {
  cachedStatement(target.db, `UPDATE ${quoteIdent(target.schema)}.${PROJECTIONS_TABLE} SET fingerprint = ? WHERE name = ?`).run(
    p.fingerprint,
    p.name,
  );
}

/** One bounded step of a protected rebuild (build-step.ts); a discarded shadow is rebuilt in this one transaction instead. */
async function continueBuild(
  here: Here,
  rec: ProjectionRecord,
  b: BuildState,
  validated: Validated | undefined,
): Promise<StepOutcome | ValidationNeeded> {
  const { target, p, view } = here;
  const table = view.tables.get(p.source.table)?.table as CapturedTable;
  const out = await buildStep(target, p, rec, view, table, b, validated, here.ctx.buildWatch);
  if (out !== 'discard') return out;
  dropShadow(target, b);
  writeBuild(target, p.name, null);
  return initialize(here, rec, b.reason);
}

/**
 * Builds the projection from the source table as it is now, with the cursor
 * at the high-water mark read in this transaction; the rows read are told
 * to the step's progress as they go (of the table's count), when it is there.
 */
async function initialize(here: Here, rec: ProjectionRecord | undefined, reason: string | undefined): Promise<StepOutcome> {
  const { target, p, view } = here;
  const progress = here.ctx.progress;
  const { db } = target;
  // (Decided already, but for a rebuild after a batch that did not prove: a table armed anew since, in keys mode...)
  const cannot = unbuildable(buildFacts(here));
  if (cannot?.does === 'suspend') return suspension(cannot.reason, cannot.detail);
  // Over a built projection: a column declared anew in place may hold values a copy cannot keep as they are (source-affinity.ts).
  const misfit = rec === undefined ? undefined : sourceAffinityGate(db, p, rec);
  if (misfit !== undefined) return misfit;
  const table = view.tables.get(p.source.table)?.table as CapturedTable;
  const install = SnapshotInstall.begin(target, p, rec);
  if (progress?.rows === false) progress.snapshotRows(0);
  await install.add(
    progress === undefined || progress.rows === false
      ? sourceRows(db, table)
      : reportedSourceRows(db, p, table, (rows, total) => progress.snapshotRows(rows, total)),
  );
  const cursor = cursorToken(db, view, [table], view.hw);
  const { rows, droppedIndexes, droppedTriggers } = await install.finish(cursor, view.hw);
  return {
    kind: 'initialized',
    rows,
    seq: view.hw,
    cursor,
    ...(reason === undefined ? {} : { reason }),
    ...(droppedIndexes.length === 0 ? {} : { droppedIndexes }),
    ...(droppedTriggers.length === 0 ? {} : { droppedTriggers }),
  };
}
