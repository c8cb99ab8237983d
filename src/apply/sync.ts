import { withReadTransaction, type Db } from '../sqlite/connection.ts';
import { shadowMatchesSource } from './verify.ts';
import type { BuildCandidate } from './shadow-build.ts';
import { FileBusyError, FileFullError, InvalidInputError, SluiceError, isSqliteBusy } from '../errors.ts';
import { readSourceView } from '../feed/source-view.ts';
import { acknowledge } from '../feed/acknowledge.ts';
import { decodeCursor } from '../feed/cursor.ts';
import { rearmCapture, type RearmReport } from '../capture/rearm.ts';
import type { CompiledProjection } from '../projection/compile.ts';
import { KINDS, kindOf } from '../projection/kinds/registry.ts';
import { checkCollisions, compileAgainstSource } from '../projection/validate.ts';
import { openApplySession, TARGET_SCHEMA, type ApplySession } from './session.ts';
import { clearFailure, ownedTables, readProjection, readProjections, recordFailure, setState } from './target-meta.ts';
import { step, type StepContext, type StepOutcome } from './step.ts';
import { DEFAULT_BUSY_TIMEOUT_MS, markBusy, retryBusy } from './retry.ts';
import { crashPoint } from './crash-points.ts';
import { damagedFile } from './damaged.ts';
import { checkSameFile, fileIdentity, type FileIdentity } from './target-identity.ts';
import { brokenDefinition, type BrokenDefinition } from './broken-definition.ts';
import fs from 'node:fs';
import { resolveDefinitions, resolveReinit } from './sync-definitions.ts';
import { TargetWatch } from './target-watch.ts';
import { checkEdited, checkPendingEdits, watchedProjections } from './target-edits.ts';
import type { Suspension } from './applier.ts';
import { ensureGuards } from './protect.ts';
import type { ProjectionReport, RunOptions, SyncOptions, SyncProgress, SyncReport } from './sync-types.ts';

export type { ProjectionReport, RunOptions, SyncOptions, SyncProgress, SyncReport } from './sync-types.ts';
import path from 'node:path';

/**
 * Default events per target transaction. A batch of random keys rewrites
 * most pages of a target table at its commit, whatever its size, so fewer,
 * larger batches catch up much faster (bench/apply.ts: 10,000 vs 100,000 is
 * about 2x for a mirror, 1.7x for fts5). Set-based kinds (mirror, map, fts5)
 * hold a batch as a few narrow SQLite temp rows per key. A custom handler
 * runs per event in JS, so its batches (its write transactions) stay short.
 */
export const DEFAULT_BATCH = { setBased: KINDS.mirror.defaultBatch, perEvent: KINDS.custom.defaultBatch } as const;

/** A batch that changes at least this many rows (net, for mirror and map) is catch-up work: the next one runs with the databases memory-mapped (ApplySession.memoryMap). */
const MAP_MIN_EVENTS = 1000;

/** The time between two steps of a protected rebuild with the target's write lock free (a little more than LOCK_POLL_MS). */
const BUILD_STEP_GAP_MS = 2;

/** Rebuild reasons that a re-arm in this open causes for a cursor made just before it. */
const REARM_REBUILDS = new Set(['TABLE_REARMED', 'SCHEMA_CHANGED', 'DEFINITION_CHANGED']);

/**
 * Keeps the projections of one source in one target database in sync.
 * Reusable across runs (follow mode keeps one open).
 *
 * @example
 * const s = await Syncer.open('app.db', 'cache.db', { projections: [{ name: 'issues', source: 'issues', kind: 'mirror' }] });
 * const report = await s.runOnce();
 * s.close();
 */
export class Syncer {
  readonly session: ApplySession;
  readonly projections: readonly CompiledProjection[];
  readonly #options: SyncOptions;
  /** SyncOptions.reinit, until the first run. */
  #reinitPending: readonly string[];
  /** Acknowledgements not yet written: consumer name -> cursor (the latest per consumer). */
  readonly #pendingAcks = new Map<string, string>();
  #lastAckMs = Number.NEGATIVE_INFINITY;
  /** The open's re-arm, until the first run has reported it. */
  #rearmPending: RearmReport | undefined;
  /**
   * The target's absolute real path: what its acknowledgements are keyed by
   * (`<projection>@<path>`), so two targets of one name in two folders are
   * two consumers, and a relative path or a symlink to one target is the same.
   */
  readonly #targetKey: string;
  /** Stored projections this open could not compile: each run suspends them in their own rows (broken-definition.ts). */
  readonly #broken: readonly BrokenDefinition[];
  /** The target file this syncer opened (checkTarget). */
  readonly #targetFile: FileIdentity | undefined;
  /** What other programs commit to the target (SyncOptions.watchTarget). */
  readonly #watch: TargetWatch | undefined;

  private constructor(
    session: ApplySession,
    projections: readonly CompiledProjection[],
    options: SyncOptions,
    rearmed: RearmReport | undefined,
    broken: readonly BrokenDefinition[],
  ) {
    this.session = session;
    this.projections = projections;
    this.#broken = broken;
    this.#options = options;
    this.#reinitPending = options.reinit ?? [];
    this.#rearmPending = rearmed;
    this.#targetKey = fs.realpathSync(session.targetPath); // the session made it: it exists
    this.#targetFile = fileIdentity(session.targetPath);
    this.#watch =
      options.watchTarget === false
        ? undefined
        : TargetWatch.open(session.db, TARGET_SCHEMA, session.targetPath, watchedProjections(projections.map((p) => p.name)));
  }

  static async open(sourcePath: string, targetPath: string, options: SyncOptions = {}): Promise<Syncer> {
    const batch = options.batchSize ?? DEFAULT_BATCH.setBased;
    if (!Number.isSafeInteger(batch) || batch < 1)
      throw new InvalidInputError('BAD_BATCH', `Batch size ${batch} must be a whole number >= 1.`);
    // A refused open writes nothing: a target file this call created (a bad
    // definition, a missing source...) is removed again, not left behind empty.
    const created = !fs.existsSync(targetPath);
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0)
      throw new InvalidInputError('BAD_BUSY_TIMEOUT', `Busy timeout ${busyTimeoutMs} must be a whole number of ms >= 0.`);
    let session: ApplySession;
    try {
      session = await retryBusy(
        async () =>
          openApplySession(sourcePath, targetPath, {
            busyTimeoutMs,
            ...(options.maxTargetMb === undefined ? {} : { maxTargetBytes: options.maxTargetMb * 2 ** 20 }),
          }),
        busyTimeoutMs,
        { source: sourcePath, target: targetPath },
      );
    } catch (err) {
      if (created) removeDatabaseFiles(targetPath);
      throw err;
    }
    try {
      const { defs, stored, broken } = await resolveDefinitions(session.db, options.projections);
      const compiled: CompiledProjection[] = [];
      for (const d of defs) {
        try {
          compiled.push(compileAgainstSource(session.db, d));
        } catch (err) {
          // A stored projection that no longer fits the source is suspended on its own; a given one is the caller's error.
          const b = stored ? brokenDefinition(d.name, d.source, 'compile', err) : undefined;
          if (b === undefined) throw err;
          broken.push(b);
        }
      }
      // Projections stored in the target but not part of this run keep their tables.
      const others = readProjections(session.db, TARGET_SCHEMA).filter((r) => !compiled.some((c) => c.name === r.name));
      checkCollisions([...compiled, ...others.map((r) => ({ name: r.name, ownedTables: ownedTables(r) }))]);
      const unbuildable = broken.find((b) => (options.reinit ?? []).includes(b.name));
      if (unbuildable !== undefined) {
        throw new InvalidInputError(
          'UNKNOWN_PROJECTION',
          `Cannot reinit ${unbuildable.name}: its stored definition cannot be compiled against the source (${unbuildable.reason}: ${String(unbuildable.detail.message)}). Put back what it names in the source, or pass a definition that fits with --projection.`,
        );
      }
      resolveReinit(options.reinit ?? [], compiled);
      // Only now, with every definition accepted: a refused open writes
      // nothing to the source either.
      return new Syncer(session, compiled, options, await rearmOrWait(session, busyTimeoutMs), broken);
    } catch (err) {
      const damaged = damagedFile(session.db, err, { source: sourcePath, target: targetPath }, TARGET_SCHEMA);
      session.close();
      if (created) removeDatabaseFiles(targetPath);
      throw damaged ?? err;
    }
  }

  /** Brings every projection up to the source's current high-water mark (or suspends it). */
  async runOnce(run: RunOptions = {}): Promise<SyncReport> {
    this.checkTarget();
    const reinit = new Set(resolveReinit([...this.#reinitPending, ...(run.reinit ?? [])], this.projections));
    this.#reinitPending = [];
    // A long-lived syncer (follow mode) re-arms between passes too: a user
    // trigger created, or a capture trigger made again, while it runs
    // would otherwise keep that table's projections suspended until restart.
    // Cheap when everything is armed (verification is cached per schema version).
    const rearmed = this.#rearmPending ?? (await rearmOrWait(this.session, this.#busyTimeoutMs));
    this.#rearmPending = undefined;
    const reports: ProjectionReport[] = [];
    for (const p of this.projections) {
      if (run.signal?.aborted === true) {
        reports.push({ ...this.#asStored(p.name), stopped: true });
        continue;
      }
      this.checkTarget();
      try {
        const cause = rearmed === undefined ? undefined : this.#rearmCause(p, rearmed);
        const r = await this.#syncOne(p, run.signal, reinit.has(p.name));
        reports.push(cause !== undefined && r.rebuilt !== undefined && REARM_REBUILDS.has(r.rebuilt) ? { ...r, rebuilt: cause } : r);
      } catch (err) {
        // One failing projection (a custom handler's throw, a gap, a busy
        // target) must not stop the others: report it and go on.
        if (err instanceof FileBusyError) {
          // Every other projection would wait for the same lock: the run stops here, with the one line that names it.
          recordFailureAlone(this.session.db, p.name, err.code, err.message);
          throw err;
        }
        // A target that cannot grow stops the run: the others would fail the same way.
        if ((err as { code?: unknown } | null)?.code === 'SQLITE_FULL') {
          const full = new FileFullError(this.session.targetPath, this.#options.maxTargetMb, { cause: err });
          recordFailureAlone(this.session.db, p.name, full.code, full.message);
          throw full;
        }
        // A damaged file stops the run too. Its failure is recorded when the projection's row can take it (health reads it).
        const damaged = damagedFile(this.session.db, err, this.#files, TARGET_SCHEMA);
        if (damaged !== undefined) {
          recordFailureAlone(this.session.db, p.name, damaged.code, damaged.message);
          throw damaged;
        }
        const code =
          err instanceof SluiceError
            ? err.code
            : typeof (err as { code?: unknown })?.code === 'string'
              ? String((err as { code: string }).code)
              : 'APPLY_FAILED';
        const message = err instanceof Error ? err.message : String(err);
        // (A Rejected change too: its rows, cursor and definition are as they were, and health shows the refusal and its repair.)
        recordFailureAlone(this.session.db, p.name, code, message);
        reports.push({ ...this.#asStored(p.name), error: { code, message } });
      }
    }
    this.#settleEdits(reports);
    for (const b of this.#broken) reports.push(await this.#suspendBroken(b));
    // An active projection's seq is the high-water mark its last transaction
    // read, so when all are active the last of those is the source's seq
    // (one read of the source view fewer per pass in follow mode).
    const sourceSeq =
      reports.length > 0 && reports.every((r) => r.state === 'active' && r.error === undefined && r.stopped === undefined)
        ? Math.max(...reports.map((r) => r.seq))
        : readSourceView(this.session.db).hw;
    if (this.#options.acknowledge ?? true) {
      crashPoint('before-ack');
      for (const r of reports) {
        if (r.cursor !== null && r.state === 'active' && r.error === undefined)
          this.#pendingAcks.set(`${r.name}@${this.#targetKey}`, r.cursor);
      }
      const interval = run.acknowledgeIntervalMs ?? 0;
      if (interval <= 0) this.#writeAcks(true);
      else if (Date.now() - this.#lastAckMs >= interval) this.#writeAcks(false);
    }
    return { sourceSeq, projections: reports, ...(rearmed === undefined ? {} : { rearmed }) };
  }

  /**
   * CAPTURE_REARMED when this open re-armed the projection's own table and
   * its cursor was made before that (so a rebuild of it now is the re-arm's
   * doing): for a definition change, only when the table was re-armed for a
   * schema change (a new column changes a mirror's definition). Projections
   * of other tables are not rebuilt by a re-arm.
   */
  #rearmCause(p: CompiledProjection, rearmed: RearmReport): string | undefined {
    const own = rearmed.tables.find((t) => t.table === p.source.table);
    if (own === undefined) return undefined;
    const rec = readProjection(this.session.db, TARGET_SCHEMA, p.name);
    if (rec?.cursor == null) return undefined;
    let generation: number;
    try {
      generation = decodeCursor(rec.cursor).generation;
    } catch {
      return undefined;
    }
    if (generation > rearmed.fromGeneration) return undefined;
    if (rec.fingerprint !== p.fingerprint && own.reason !== 'SCHEMA_CHANGED') return undefined;
    return 'CAPTURE_REARMED';
  }

  /**
   * Writes the acknowledgements that throttled runs (RunOptions.acknowledgeIntervalMs)
   * left pending: all of them, or with `intervalMs` only when the last write
   * is at least that old. With `wait: false`, only if the source's write
   * lock is free at once (otherwise they stay pending). Call it between
   * runs, never during one.
   */
  flushAcknowledgements(options: { readonly wait?: boolean; readonly intervalMs?: number } = {}): void {
    if (this.#pendingAcks.size === 0) return;
    if (options.intervalMs !== undefined && Date.now() - this.#lastAckMs < options.intervalMs) return;
    this.#writeAcks(options.wait ?? true);
  }

  #writeAcks(wait: boolean): void {
    const db = this.session.db;
    const busyTimeout = wait ? undefined : (db.pragma('busy_timeout', { simple: true }) as number | bigint);
    if (busyTimeout !== undefined) db.pragma('busy_timeout = 0');
    try {
      for (const [consumer, cursor] of this.#pendingAcks) {
        try {
          acknowledge(db, consumer, cursor);
          this.#pendingAcks.delete(consumer);
        } catch (err) {
          /* acknowledgements are informational and may lag */
          if (!wait && isSqliteBusy(err)) break; // stays pending for the next try
          this.#pendingAcks.delete(consumer);
        }
      }
    } finally {
      if (busyTimeout !== undefined) db.pragma(`busy_timeout = ${Number(busyTimeout)}`);
    }
    this.#lastAckMs = Date.now();
  }

  /** Suspends a stored projection this open could not compile, in its own row (written only when it changes). */
  async #suspendBroken(b: BrokenDefinition): Promise<ProjectionReport> {
    const report = { name: b.name, state: 'suspended' as const, reason: b.reason, detail: b.detail, applied: 0, cursor: null, seq: 0 };
    try {
      const rec = readProjection(this.session.db, TARGET_SCHEMA, b.name);
      if (rec?.state !== 'suspended' || rec.reason !== b.reason || rec.detail !== JSON.stringify(b.detail)) {
        await retryBusy(
          async () => setState(this.session.db, TARGET_SCHEMA, b.name, 'suspended', b.reason, b.detail),
          this.#busyTimeoutMs,
          this.#files,
        );
      }
      this.#options.onProgress?.({ projection: b.name, phase: 'suspended', seq: 0, sourceSeq: 0, events: 0 });
      return report;
    } catch (err) {
      return {
        ...report,
        error: { code: err instanceof SluiceError ? err.code : 'APPLY_FAILED', message: err instanceof Error ? err.message : String(err) },
      };
    }
  }

  /** The source's high-water mark for progress only: 0 when it cannot be read (the step then says why). */
  #sourceHighWater(): number {
    try {
      return readSourceView(this.session.db).hw;
    } catch {
      return 0;
    }
  }

  /** A projection's report from its stored row alone (nothing applied in this run). */
  #asStored(name: string): ProjectionReport {
    const rec = readProjection(this.session.db, TARGET_SCHEMA, name);
    return {
      name,
      state: rec?.state ?? 'building',
      ...(rec?.reason == null ? {} : { reason: rec.reason }),
      applied: 0,
      cursor: rec?.cursor ?? null,
      seq: rec?.seq ?? 0,
    };
  }

  async #syncOne(p: CompiledProjection, signal: AbortSignal | undefined, reinit: boolean): Promise<ProjectionReport> {
    const base = {
      db: this.session.db,
      schema: TARGET_SCHEMA,
      sourcePath: path.resolve(this.session.sourcePath),
      batchSize: this.#options.batchSize ?? kindOf(p).defaultBatch,
      afterLock: this.#afterLock,
      beforeCommit: this.#beforeCommit,
    };
    let ctx: StepContext = reinit ? { ...base, reinit: true } : base;
    let applied = 0;
    // Committed target transactions, for metrics (ProjectionReport.batches / lastCommitMs).
    let commits: Pick<ProjectionReport, 'batches' | 'lastCommitMs'> = {};
    const committed = () => (commits = { batches: (commits.batches ?? 0) + 1, lastCommitMs: Date.now() });
    // What a snapshot in this run adds to the report.
    let built: Pick<ProjectionReport, 'snapshotRows' | 'rebuilt' | 'droppedIndexes' | 'swapped'> = {};
    // A step runs synchronously under its awaits: between two of them, give
    // the event loop a turn, or a signal handler (SIGTERM) only runs once the
    // whole catch-up is done. True when the run must stop here.
    // The range this run covers, for progress: from the stored seq to the
    // source's high-water mark as read now (a later commit only raises it).
    const startSeq = this.#options.onProgress === undefined ? 0 : (readProjection(this.session.db, TARGET_SCHEMA, p.name)?.seq ?? 0);
    let sourceHw = this.#options.onProgress === undefined ? 0 : this.#sourceHighWater();
    const startedMs = Date.now();
    const progress = (phase: SyncProgress['phase'], seq: number, rows?: number) => {
      sourceHw = Math.max(sourceHw, seq);
      this.#options.onProgress?.({
        projection: p.name,
        phase,
        seq,
        sourceSeq: phase === 'suspended' ? 0 : sourceHw,
        events: applied,
        ...(rows === undefined ? {} : { rows }),
        startSeq: Math.min(startSeq, seq),
        elapsedMs: Date.now() - startedMs,
      });
    };
    const stopHere = async () => {
      if (signal === undefined) return false;
      await new Promise<void>((resolve) => setImmediate(resolve));
      return signal.aborted;
    };
    for (;;) {
      this.checkTarget(); // a long catch-up stops between two batches too
      const out: StepOutcome = await retryBusy(() => step(ctx, p), this.#busyTimeoutMs, this.#files);
      this.#watch?.between();
      ctx = base; // a reinit is the first step only
      if (out.kind === 'validate') {
        // A protected rebuild's shadow is caught up: checked against the source in a read transaction (no lock held), then swapped in.
        ctx = { ...base, validated: { seq: out.build.caughtSeq, ok: this.#shadowMatches(p, out.candidate, out.tid) } };
        continue;
      }
      if (out.kind === 'building') {
        crashPoint('build-step');
        progress('snapshot', out.seq, out.rows);
        if (await stopHere()) return { ...this.#asStored(p.name), applied, ...built, stopped: true };
        // A writer waiting for the target (another projection's follower, polling: takeWriteLock) takes it here.
        await new Promise((resolve) => setTimeout(resolve, BUILD_STEP_GAP_MS));
        continue;
      }
      // Mapped while catching up, not while following small batches (session.ts).
      if (out.kind === 'applied') this.session.memoryMap(!out.caughtUp || out.events >= MAP_MIN_EVENTS);
      else if (out.kind === 'current') {
        this.session.memoryMap(false);
        // A success with nothing to commit: a failure recorded by an earlier attempt no longer stands.
        if ((readProjection(this.session.db, TARGET_SCHEMA, p.name)?.failures ?? 0) > 0) clearFailureAlone(this.session.db, p.name);
      }
      if (out.kind === 'suspended') {
        progress('suspended', 0);
        return {
          name: p.name,
          state: 'suspended',
          reason: out.reason,
          detail: out.detail,
          applied,
          cursor: null,
          seq: 0,
          ...built,
          ...commits,
        };
      }
      const active = { name: p.name, state: 'active' as const, cursor: out.cursor, seq: out.seq };
      if (out.kind === 'initialized' || out.kind === 'applied') committed();
      if (out.kind === 'initialized') {
        built = {
          snapshotRows: out.rows,
          ...(out.reason === undefined ? {} : { rebuilt: out.reason }),
          ...(out.swapped === true ? { swapped: true as const } : {}),
          ...(out.droppedIndexes === undefined ? {} : { droppedIndexes: out.droppedIndexes }),
        };
        progress('snapshot', out.seq, out.rows);
        if (await stopHere()) return { ...active, applied, ...built, ...commits, stopped: true };
        continue;
      }
      if (out.kind === 'applied') {
        applied += out.events;
        progress('catch-up', out.seq);
        if (!out.caughtUp) {
          if (await stopHere()) return { ...active, applied, ...built, ...commits, stopped: true };
          continue;
        }
      }
      progress('current', out.seq);
      return { ...active, applied, ...built, ...commits };
    }
  }

  /** Whether a protected rebuild's copy holds exactly the source's rows (verify's checksums, in one read transaction). */
  #shadowMatches(p: CompiledProjection, c: BuildCandidate, tid: number): boolean {
    const db = this.session.db;
    return withReadTransaction(db, () => {
      const rec = readProjection(db, TARGET_SCHEMA, p.name);
      if (rec === undefined) return false;
      return shadowMatchesSource(db, { ...rec, kind: c.kind }, c, readSourceView(db).hw, tid).ok;
    });
  }

  /**
   * Applies exactly the batch (fromSeq, toSeq] to one projection in one
   * target transaction: a no-op when already applied, only the new part when
   * it overlaps the stored cursor, a BATCH_GAP error when it starts after it.
   */
  async applyBatch(name: string, fromSeq: number, toSeq: number): Promise<StepOutcome> {
    const p = this.projections.find((x) => x.name === name);
    if (p === undefined)
      throw new InvalidInputError(
        'UNKNOWN_PROJECTION',
        `No projection named ${name} in this sync (have: ${this.projections.map((x) => x.name).join(', ')}).`,
      );
    const ctx = {
      db: this.session.db,
      schema: TARGET_SCHEMA,
      sourcePath: path.resolve(this.session.sourcePath),
      batchSize: Number.MAX_SAFE_INTEGER,
      range: { fromSeq, toSeq },
      afterLock: this.#afterLock,
      beforeCommit: this.#beforeCommit,
    };
    return retryBusy(() => step(ctx, p), this.#busyTimeoutMs, this.#files);
  }

  /**
   * Throws TARGET_GONE when the file at the target's path is no longer the
   * one this syncer opened (deleted or replaced: target-identity.ts). Each
   * run checks it before every batch; a follower also while idle.
   */
  checkTarget(): void {
    checkSameFile(this.session.targetPath, this.#targetFile);
  }

  get #busyTimeoutMs(): number {
    return this.#options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  }

  get #files(): { source: string; target: string } {
    return { source: this.session.sourcePath, target: this.session.targetPath };
  }

  /**
   * For a follower while the source is idle: when another program has
   * committed to the target, checks the projections it wrote and suspends
   * those it changed (TARGET_EDITED). A report of every projection when it
   * suspended one, else undefined. Never waits for the target's lock.
   */
  noticeTargetEdits(): SyncReport | undefined {
    const w = this.#watch;
    if (w === undefined || !w.between()) return undefined;
    const found = checkPendingEdits(w, this.session.db, TARGET_SCHEMA, this.projections, { wait: false });
    if (found === undefined || found.size === 0) return undefined;
    const reports = this.projections.map((p) => {
      const s = found.get(p.name);
      return s === undefined
        ? this.#asStored(p.name)
        : { name: p.name, state: 'suspended' as const, reason: s.reason, detail: s.detail, applied: 0, cursor: null, seq: 0 };
    });
    return { sourceSeq: this.#sourceHighWater(), projections: reports };
  }

  /**
   * In a step, with the target's lock held: reads what other programs
   * committed, and suspends `p` when it is one they changed (unless this step
   * rebuilds it anyway: a reinit).
   */
  readonly #afterLock = (p: CompiledProjection, rebuilds: boolean): Suspension | undefined => {
    const w = this.#watch;
    if (w === undefined) return undefined;
    w.locked();
    if (!rebuilds) return checkEdited(w, this.session.db, TARGET_SCHEMA, p.name);
    w.settle(p.name);
    return undefined;
  };

  /** Before a step commits: a protected target's guards on the tables it made (protect.ts). */
  readonly #beforeCommit = (p: CompiledProjection): void => ensureGuards(this.session.db, TARGET_SCHEMA, p.name);

  /**
   * Projections another program changed that this run found after their own
   * steps: checked now, their reports replaced. A busy target leaves them
   * for the next run (or a follower's idle look).
   */
  #settleEdits(reports: ProjectionReport[]): void {
    const w = this.#watch;
    if (w === undefined) return;
    const found = checkPendingEdits(w, this.session.db, TARGET_SCHEMA, this.projections, { wait: false }) ?? new Map<string, Suspension>();
    for (const [i, r] of reports.entries()) {
      const s = found.get(r.name);
      if (s === undefined) continue;
      reports[i] = { name: r.name, state: 'suspended', reason: s.reason, detail: s.detail, applied: r.applied, cursor: null, seq: 0 };
      this.#options.onProgress?.({ projection: r.name, phase: 'suspended', seq: 0, sourceSeq: 0, events: r.applied });
    }
  }

  close(): void {
    this.#watch?.close();
    this.session.close();
  }
}

/** rearmCapture, waiting up to the busy timeout for the source's write lock (SOURCE_BUSY past it). */
function rearmOrWait(session: ApplySession, busyTimeoutMs: number): Promise<RearmReport | undefined> {
  const rearm = async () => {
    try {
      return rearmCapture(session.db);
    } catch (err) {
      markBusy(err, 'source');
      throw err;
    }
  };
  return retryBusy(rearm, busyTimeoutMs, { source: session.sourcePath, target: session.targetPath });
}

/** One-shot sync: open, run once, close. */
export async function sync(sourcePath: string, targetPath: string, options: SyncOptions = {}): Promise<SyncReport> {
  const s = await Syncer.open(sourcePath, targetPath, options);
  try {
    return await s.runOnce();
  } finally {
    s.close();
  }
}

/**
 * Records a projection's failed attempt (health reports it) in a target
 * transaction of its own: the failed one has rolled back. Best effort: a
 * target that cannot take it (full, busy) keeps the previous record.
 */
function recordFailureAlone(db: Db, name: string, code: string, message: string): void {
  try {
    db.exec('BEGIN');
    recordFailure(db, TARGET_SCHEMA, name, code, message);
    db.exec('COMMIT');
  } catch {
    if (db.inTransaction) db.exec('ROLLBACK');
  }
}

/** Clears a projection's recorded failures in a target transaction of its own; best effort, as recordFailureAlone. */
function clearFailureAlone(db: Db, name: string): void {
  try {
    db.exec('BEGIN');
    clearFailure(db, TARGET_SCHEMA, name);
    db.exec('COMMIT');
  } catch {
    if (db.inTransaction) db.exec('ROLLBACK');
  }
}

function removeDatabaseFiles(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) fs.rmSync(`${file}${suffix}`, { force: true });
}
