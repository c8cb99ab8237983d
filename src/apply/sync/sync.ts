import { targetTableProblems } from '../check/index.ts';
import type { Db } from '../../sqlite/index.ts';
import {
  writeAlone,
  withWriteTransaction,
  schemaVersion,
  checkHeldFile,
  checkSameFileStamp,
  pathIdentity,
  fileStamp,
  type FileIdentity,
  quoteIdent,
  requireOutputPath,
  removeMadeDatabase,
  shellCommand,
  checkpointScrubbed,
  scrubCheckpointOwed,
  withReadTransaction,
} from '../../sqlite/index.ts';
import { FileBusyError, FileFullError, InvalidInputError, SluiceError, isSqliteBusy, errorCode } from '../../errors.ts';
import { readSourceView, acknowledge, forgetConsumer, type AcknowledgedFor, decodeCursor, validateCursor } from '../../feed/index.ts';
import { syncConsumerName, checkRearm, type RearmCheck, type RearmReport, readState } from '../../capture/index.ts';
import {
  checkConsumers,
  type LostProjection,
  clearDrops,
  recordSynced,
  openApplySession,
  TARGET_SCHEMA,
  type ApplySession,
  clearFailure,
  readProjection,
  readProjections,
  setState,
  DEFAULT_BUSY_TIMEOUT_MS,
  markBusy,
  retryBusy,
  damagedFile,
  clearUnguarded,
  brokenTriggerProblem,
} from '../target/index.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { KINDS, kindOf, ownedTablesAt } from '../../projection/index.ts';
import { step, type StepContext, type StepOutcome } from './step.ts';
import { failureOf, recordFailed, type FailedRow } from './projection-failure.ts';
import { quietProjections, targetVersion, type LeftAt } from './quiet-projections.ts';
import { crashPoint } from './crash-points.ts';
import { dropOneRetired, hasRetired } from './retired-drop.ts';
import type { BrokenDefinition, Suspension } from '../projections/index.ts';
import fs from 'node:fs';
import {
  acknowledgesLost,
  admitted,
  resolveProjections,
  resolveReinit,
  type DefinitionInput,
  type Refusal,
  type Resolution,
  storeProjectionSet,
  storedDefinitionsMoved,
  type SetChange,
  type Unmirrored,
} from '../projections/index.ts';
import {
  TargetWatch,
  BuildVouch,
  checkEdited,
  checkPendingEdits,
  watchedProjections,
  ensureGuards,
  unguardedTables,
} from '../edits/index.ts';
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

/** How often a follower tries again to finish a scrubbed drop's checkpoint that another program's reader kept from finishing. */
const SCRUB_RETRY_MS = 1000;

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
  /** The projections each run syncs, compiled against the source (again after its schema or the definitions change). */
  #projections: readonly CompiledProjection[];
  readonly #options: SyncOptions;
  /** SyncOptions.reinit, until the first run. */
  #reinitPending: readonly string[];
  /** Acknowledgements not yet written: consumer name -> cursor (the latest per consumer). */
  readonly #pendingAcks = new Map<string, string>();
  /**
   * The cursor each consumer's acknowledgement last wrote. A follower's pass
   * that moved nothing leaves it pending no write: another follower of the
   * same source sees each acknowledgement as a commit and runs a pass, so
   * writing the same position again made two followers wake each other
   * about once a second, forever, on an idle source.
   */
  readonly #ackedCursors = new Map<string, string>();
  /** Projections whose row this syncer found naming its source as the one that feeds them (#recordSource). */
  readonly #sourced = new Set<string>();
  #lastAckMs = Number.NEGATIVE_INFINITY;
  /** When a run last compared the source's acknowledgements with the target (#checkConsumers), and the lost ones it found. */
  #consumersCheckedMs = Number.NEGATIVE_INFINITY;
  #lost: readonly LostProjection[] = [];
  /** The open's re-arm, until the first run has reported it. */
  #rearmPending: RearmReport | undefined;
  /**
   * The target's absolute real path: what its acknowledgements are keyed by
   * (`<projection>@<path>`), so two targets of one name in two folders are
   * two consumers, and a relative path or a symlink to one target is the same.
   */
  readonly #targetKey: string;
  /** Stored projections this sync could not compile: each run suspends them in their own rows (broken-definition.ts). */
  #broken: readonly BrokenDefinition[];
  /** Given definitions a refresh refused (the open throws them): each run reports them as their projections' errors. */
  #refused: readonly Refusal[] = [];
  /** The last run left a projection failed by an error that may pass by itself (failedMayClear). */
  #mayClear = false;
  /** The target's schema_version when the last run started, for targetSchemaChanged; none before the first. */
  #schemaAtRun: number | undefined;
  /** When #between last tried to finish a scrubbed drop's owed checkpoint. */
  #scrubTriedMs = 0;
  /** What the definitions come from: the given ones (SyncOptions.projections, or setDefinitions), or the target's set (empty). */
  #given: readonly DefinitionInput[];
  /** Set by setDefinitions: the next run compiles the definitions again. */
  #definitionsChanged = false;
  /** The source's schema_version the projections were compiled at: a run after DDL compiles them again. */
  #compiledAt: number;
  /**
   * The definitions the target stored when the projections were compiled (Resolution.stored): a run after
   * another program changed them (a repair made by another sync, a drop) compiles them again, so that a
   * follower neither suspends a repaired projection with the reason it found before nor misses it.
   */
  #stored: ReadonlyMap<string, string>;
  /** The target's data_version when #storedMoved last read the stored definitions (another program's commit moves it). */
  #storedLookedAt: number | undefined;
  /** Set when a run found the target storing another definition than the one it judged: the next run compiles again. */
  #storedStale = false;
  /** When "*" runs: the captured tables it does not mirror (reported by each run). */
  #unmirrored: readonly Unmirrored[] | undefined;
  /** What the first run stores in the target's projection set (projection-set.ts). */
  #storeSet: SetChange | undefined;
  /** The target file this syncer opened (checkTarget). */
  readonly #targetFile: FileIdentity | undefined;
  /**
   * The target file's stamp (fileStamp: inode, size, times) when checkTarget
   * last looked: a move means the file was written since, by a checkpoint
   * (sluice's own, most often) or by something that is no SQLite commit (an
   * older copy copied over it), which no data_version shows (#fileRewritten).
   */
  #targetStamp: string;
  /** What other programs commit to the target (SyncOptions.watchTarget). */
  readonly #watch: TargetWatch | undefined;
  /** The protected rebuilds this syncer started whose tables the watch saw no other program write (build-vouch.ts). */
  readonly #builds: BuildVouch | undefined;
  /** Where each projection's last step left it, active and current (RunOptions.leaveQuiet: quiet-projections.ts). */
  readonly #leftAt = new Map<string, LeftAt>();
  /** The target's data_version at the start of the last run: another program's commit since makes #leftAt stale. */
  #targetVersion: number | undefined;
  /** The projections the last runs left at their cursor, each with the high-water mark its table had no event up to (settleQuiet). */
  readonly #behind = new Map<string, number>();
  /** Whether the target may hold tables a swap retired (a run killed before it dropped them): checked at the first run. */
  #retiredUnchecked = true;

  private constructor(session: ApplySession, resolved: Resolution, options: SyncOptions, rearmed: RearmReport | undefined) {
    this.session = session;
    this.#projections = resolved.compiled;
    this.#broken = resolved.broken;
    this.#unmirrored = resolved.mirrorAll?.unmirrored;
    this.#storeSet = resolved.store;
    this.#given = options.projections ?? [];
    this.#options = options;
    this.#reinitPending = options.reinit ?? [];
    this.#rearmPending = rearmed;
    this.#targetKey = fs.realpathSync(session.targetPath); // the session made it: it exists
    this.#targetFile = pathIdentity(session.targetPath);
    this.#targetStamp = fileStamp(session.targetPath);
    this.#compiledAt = schemaVersion(session.db);
    this.#stored = resolved.stored;
    // The projections watched are this syncer's at each look (a follower's --projection files may change them).
    this.#watch =
      options.watchTarget === false
        ? undefined
        : TargetWatch.open(session.db, TARGET_SCHEMA, session.targetPath, (snap) =>
            watchedProjections(this.#projections.map((p) => p.name))(snap),
          );
    this.#builds = this.#watch === undefined ? undefined : new BuildVouch(this.#watch);
  }

  get projections(): readonly CompiledProjection[] {
    return this.#projections;
  }

  /**
   * Replaces the given definitions (a follower whose --projection files
   * changed): the next run compiles them against the source. A definition
   * refused then (one that never compiled) is reported as its projection's
   * error in each run, and the others go on.
   */
  setDefinitions(projections: readonly DefinitionInput[]): void {
    this.#given = projections;
    this.#definitionsChanged = true;
    this.#ackedCursors.clear(); // a changed kind is written with the next acknowledgement
  }

  static async open(sourcePath: string, targetPath: string, options: SyncOptions = {}): Promise<Syncer> {
    const batch = options.batchSize ?? DEFAULT_BATCH.setBased;
    if (!Number.isSafeInteger(batch) || batch < 1)
      throw new InvalidInputError('BAD_BATCH', `Batch size ${batch} must be a whole number >= 1.`);
    // A refused open writes nothing: a target file this call created (a bad
    // definition, a missing source...) is removed again, not left behind empty.
    const created = !fs.existsSync(targetPath);
    // Before anything is opened: a new target's path (not ending in "/", in a folder that exists, through no file).
    if (created) requireOutputPath(targetPath, { given: 'target', example: 'target.db' });
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0)
      throw new InvalidInputError('BAD_BUSY_TIMEOUT', `Busy timeout ${busyTimeoutMs} must be a whole number of ms >= 0.`);
    let session: ApplySession;
    try {
      session = await retryBusy(
        async () =>
          openApplySession(sourcePath, targetPath, {
            busyTimeoutMs,
            command: (source, target) =>
              options.reinit?.length === 1
                ? shellCommand('reinit', { source, target, projection: options.reinit[0] })
                : shellCommand('sync', { source, target }),
            ...(options.maxTargetMb === undefined ? {} : { maxTargetBytes: options.maxTargetMb * 2 ** 20 }),
          }),
        busyTimeoutMs,
        { source: sourcePath, target: targetPath },
      );
    } catch (err) {
      if (created) removeMadeDatabase(targetPath);
      throw err;
    }
    try {
      const resolved = await resolveProjections(session.db, options.projections ?? [], path.resolve(sourcePath), options.nothingToMirror);
      const { kept, refused } = admitted(resolved.compiled, readProjections(session.db, TARGET_SCHEMA));
      const first = [...resolved.refused, ...refused][0];
      if (first !== undefined) throw first.error;
      // A plain sync into a target whose projections are all other sources' has nothing to run: refused
      // (NO_PROJECTIONS_OF_SOURCE), as verify and explain refuse it, unless the source acknowledges projections
      // the target lost (each run reports them, CONSUMER_NOT_BUILT, exit 3, as verify lists them).
      if (resolved.othersOnly !== undefined && !acknowledgesLost(session.db, session.sourcePath, targetPath))
        throw resolved.othersOnly({ source: sourcePath, target: targetPath });
      const unbuildable = resolved.broken.find((b) => (options.reinit ?? []).includes(b.name));
      if (unbuildable !== undefined) {
        // Not a name that is missing: the projection is there, and the code says why it cannot be built.
        throw new InvalidInputError(
          unbuildable.reason,
          `Cannot reinit ${unbuildable.name}: its stored definition cannot be compiled against the source (${String(unbuildable.detail.message)}). Put back what it names in the source, or pass a definition that fits with --projection.`,
        );
      }
      resolveReinit(options.reinit ?? [], kept);
      // Only now, with every definition accepted: a refused open writes
      // nothing to the source either.
      const rearmed = (await rearmOrWait(session, busyTimeoutMs)).report;
      return new Syncer(session, { ...resolved, compiled: kept }, options, rearmed);
    } catch (err) {
      const damaged = damagedFile(session.db, err, { source: sourcePath, target: targetPath }, TARGET_SCHEMA);
      session.close();
      if (created) removeMadeDatabase(targetPath);
      throw damaged ?? err;
    }
  }

  /**
   * Compiles the definitions again when the source's schema changed since
   * (a column dropped, a table enabled: "*" mirrors it), they were
   * replaced (setDefinitions), or another program changed the definitions
   * the target stores (#storedMoved). A given definition that no longer
   * compiles and that the target stores as it is, is suspended; one the
   * target does not store as it is is refused (reported by each run); the
   * others go on.
   */
  async #refresh(unchangedAt: number | undefined): Promise<void> {
    const db = this.session.db;
    // The schema_version the pass's re-arm check read just before, when it
    // found nothing to do (it read and wrote nothing else: RearmCheck), is
    // the same fact read microseconds earlier, not read again. DDL landing
    // after it is no different from DDL landing after a read here: the step
    // reads schema_version again in its own transaction (source-view.ts),
    // and #compiledAt keeps the older value, so the next pass compiles again.
    const version = unchangedAt ?? schemaVersion(db);
    if (!this.#definitionsChanged && version === this.#compiledAt && !this.#storedMoved()) return;
    const resolved = await resolveProjections(db, this.#given, path.resolve(this.session.sourcePath), this.#options.nothingToMirror);
    this.#passTargetVersion = undefined; // (a compile may load handlers: read again after it)
    const { kept, refused } = admitted(resolved.compiled, readProjections(db, TARGET_SCHEMA));
    this.#projections = kept;
    this.#broken = resolved.broken;
    this.#refused = [...resolved.refused, ...refused];
    this.#unmirrored = resolved.mirrorAll?.unmirrored;
    this.#storeSet ??= resolved.store;
    this.#definitionsChanged = false;
    this.#compiledAt = version;
    this.#stored = resolved.stored;
    this.#storedStale = false;
  }

  /**
   * Whether the target stores other definitions than those the projections
   * were compiled with: read only when another program committed to the
   * target since the last look (its data_version moved), or a run found one
   * changed (#storedStale). This syncer's own rebuilds change them too; the
   * next look after another program's commit then compiles once more.
   */
  #storedMoved(): boolean {
    if (this.#storedStale) return true;
    const db = this.session.db;
    const version = this.#targetVersionNow();
    if (version === this.#storedLookedAt) return false;
    this.#storedLookedAt = version;
    return storedDefinitionsMoved(this.#stored, readProjections(db, TARGET_SCHEMA));
  }

  /**
   * Whether the last run left a projection failed by an error that may pass
   * by itself: a handler's own throw, or SQLite's (a service down, a lock).
   * Not a refusal sluice made (a Rejected definition change, a refused
   * definition, a rule a handler broke): only the user's repair ends those,
   * and a pass tried again would fail the same way.
   */
  get failedMayClear(): boolean {
    return this.#mayClear;
  }

  /**
   * Whether the target's schema changed since the last run started: a run now
   * may lift a suspension by a trigger or UNIQUE index a user made in the
   * target (a DROP TRIGGER or DROP INDEX there, the repair its message asks
   * for), and must say a projection's table dropped, renamed away or
   * reshaped by hand (TARGET_TABLE_CHANGED, as health does). A follower
   * passes on source commits only, so it asks this while the source is
   * idle (one PRAGMA). Read between runs.
   */
  targetSchemaChanged(): boolean {
    return this.#schemaAtRun !== undefined && schemaVersion(this.session.db, TARGET_SCHEMA) !== this.#schemaAtRun;
  }

  /** Brings every projection up to the source's current high-water mark (or suspends it). */
  async runOnce(run: RunOptions = {}): Promise<SyncReport> {
    this.#mayClear = false;
    // Before its steps read the target: DDL another program commits during the run brings the next (targetSchemaChanged);
    // this run's own (a rebuild, protect's guards) brings one more pass, which finds nothing.
    this.#schemaAtRun = schemaVersion(this.session.db, TARGET_SCHEMA);
    this.checkSource();
    this.checkTarget();
    // A long-lived syncer (follow mode) re-arms between passes too: a user
    // trigger created, or a capture trigger made again, while it runs
    // would otherwise keep that table's projections suspended until restart.
    // Cheap when everything is armed (verification is cached per schema version).
    const check: RearmCheck =
      this.#rearmPending !== undefined ? { report: this.#rearmPending } : await rearmOrWait(this.session, this.#busyTimeoutMs);
    const rearmed = check.report;
    this.#rearmPending = undefined;
    this.#passTargetVersion = undefined;
    await this.#refresh(check.unchangedAt);
    const reinit = new Set(resolveReinit([...this.#reinitPending, ...(run.reinit ?? [])], this.projections));
    this.#reinitPending = [];
    const store = this.#storeSet;
    if (store !== undefined) {
      await retryBusy(async () => storeProjectionSet(this.session.db, TARGET_SCHEMA, store), this.#busyTimeoutMs, this.#files);
      this.#storeSet = undefined;
      this.#passTargetVersion = undefined; // (it may have waited for the target)
    }
    if (this.#retiredUnchecked) {
      this.#retiredUnchecked = false;
      if (hasRetired(this.session.db, TARGET_SCHEMA)) await this.#dropRetired();
      this.#passTargetVersion = undefined;
    }
    const reports: ProjectionReport[] = [];
    let quiet = this.#quiet(run, rearmed === undefined && reinit.size === 0 && store === undefined);
    for (const [i, p] of this.projections.entries()) {
      if (run.signal?.aborted === true) {
        reports.push({ ...this.#asStored(p.name), stopped: true });
        continue;
      }
      const left = quiet?.quiet.get(p.name);
      if (left !== undefined) {
        reports.push({ name: p.name, state: 'active', applied: 0, cursor: left.cursor, seq: left.seq });
        this.#behind.set(p.name, quiet?.hw ?? left.seq);
        continue;
      }
      this.#behind.delete(p.name);
      // (runOnce checked the target just above, before the first projection. A file rewritten since: none is left quiet.)
      if (i > 0 && this.checkTarget()) quiet = undefined;
      this.#leftAt.delete(p.name);
      try {
        const cause = rearmed === undefined ? undefined : this.#rearmCause(p, rearmed);
        const r = await this.#syncOne(p, run.signal, reinit.has(p.name));
        if (r.state === 'active' && r.stopped === undefined && r.error === undefined && r.cursor !== null)
          this.#leftAt.set(p.name, { cursor: r.cursor, seq: r.seq, fingerprint: p.fingerprint, steppedMs: Date.now() });
        reports.push(cause !== undefined && r.rebuilt !== undefined && REARM_REBUILDS.has(r.rebuilt) ? { ...r, rebuilt: cause } : r);
      } catch (err) {
        // A replaced source stops the run (no cursor was made for the new file: source-view.ts), recorded for every projection.
        if (err instanceof SluiceError && err.code === 'SOURCE_REPLACED') this.#sourceReplaced(err);
        // One failing projection (a custom handler's throw, a gap, a busy
        // target) must not stop the others: report it and go on.
        const failed = this.#failedRow(p);
        if (err instanceof FileBusyError) {
          // Every other projection would wait for the same lock: the run stops here, with the one line that names it.
          recordFailureAlone(this.session.db, failed, err.code, err.message);
          throw err;
        }
        // A target that cannot grow stops the run: the others would fail the same way.
        if (errorCode(err) === 'SQLITE_FULL') {
          const full = new FileFullError(this.session.targetPath, this.#options.maxTargetMb, { cause: err });
          recordFailureAlone(this.session.db, failed, full.code, full.message);
          throw full;
        }
        // A damaged file stops the run too. Its failure is recorded when the projection's row can take it (health reads it).
        const damaged = damagedFile(this.session.db, err, this.#files, TARGET_SCHEMA);
        if (damaged !== undefined) {
          recordFailureAlone(this.session.db, failed, damaged.code, damaged.message);
          throw damaged;
        }
        // A table of it dropped or changed by hand: what health says of it, with the repair, not SQLite's "no such table".
        const changed = err instanceof SluiceError ? undefined : this.#tableProblem(p);
        if (!(err instanceof SluiceError) && changed === undefined) this.#mayClear = true;
        // A user's trigger on its tables that no longer compiles (SQLite's bare "no such table"): which, where, and the fix.
        const trigger = changed === undefined && errorCode(err) === 'SQLITE_ERROR' ? this.#triggerProblem(p) : undefined;
        const { code, message } = trigger === undefined ? failureOf(err, changed) : { code: 'TARGET_TRIGGER_BROKEN', message: trigger };
        // (A Rejected change too: its rows, cursor and definition are as they were, and health shows the refusal and its repair.)
        recordFailureAlone(this.session.db, failed, code, message);
        reports.push({ ...this.#asStored(p.name), error: { code, message } });
      }
    }
    this.#recordSource();
    this.#settleEdits(reports);
    for (const b of this.#broken) reports.push(await this.#suspendBroken(b));
    for (const r of this.#refused) {
      const { code, message } = r.error;
      if (readProjection(this.session.db, TARGET_SCHEMA, r.name) !== undefined) recordFailureAlone(this.session.db, r.name, code, message);
      reports.push({ ...this.#asStored(r.name), error: { code, message } });
    }
    // An active projection's seq is the high-water mark its last transaction
    // read, so when all are active the last of those is the source's seq
    // (one read of the source view fewer per pass in follow mode).
    const sourceSeq =
      reports.length > 0 && reports.every((r) => r.state === 'active' && r.error === undefined && r.stopped === undefined)
        ? Math.max(quiet?.hw ?? 0, ...reports.map((r) => r.seq))
        : readSourceView(this.session.db).hw;
    let consumers: { readonly lost: readonly LostProjection[]; readonly forgotten: readonly string[] } = { lost: [], forgotten: [] };
    if (this.#options.acknowledge ?? true) {
      crashPoint('before-ack');
      const interval = run.acknowledgeIntervalMs ?? 0;
      for (const r of reports) {
        if (r.cursor === null || r.state !== 'active' || r.error !== undefined) continue;
        const consumer = syncConsumerName(r.name, this.#targetKey);
        if (interval > 0 && this.#ackedCursors.get(consumer) === r.cursor) this.#pendingAcks.delete(consumer);
        else this.#pendingAcks.set(consumer, r.cursor);
      }
      if (interval <= 0) this.#writeAcks(true);
      else if (Date.now() - this.#lastAckMs >= interval) this.#writeAcks(false);
      // A follower compares them at most once per acknowledgement interval (they change with a deleted
      // target or a drop, not with each commit), and reports the lost ones it found in between.
      if (interval <= 0 || Date.now() - this.#consumersCheckedMs >= interval) {
        consumers = this.#checkConsumers();
        this.#lost = consumers.lost;
        this.#consumersCheckedMs = Date.now();
      } else consumers = { lost: this.#lost, forgotten: [] };
    }
    return {
      sourceSeq,
      projections: reports,
      ...(rearmed === undefined ? {} : { rearmed }),
      ...(this.#unmirrored === undefined || this.#unmirrored.length === 0 ? {} : { unmirrored: this.#unmirrored }),
      ...(consumers.lost.length === 0 ? {} : { lost: consumers.lost }),
      ...(consumers.forgotten.length === 0 ? {} : { forgotten: consumers.forgotten }),
    };
  }

  /**
   * Moves the cursor of each projection a follower's runs left at its cursor
   * (RunOptions.leaveQuiet) to the high-water mark its table was found quiet
   * up to: one target transaction each, applying the empty range between
   * (applyBatch), as the step that was left out would have. A follower calls
   * it when the source is idle and when it stops, so that a target at rest
   * holds every cursor at the source's position (health, acknowledgements).
   * Best effort: a projection it cannot move is stepped by the next run.
   *
   * @example
   * await syncer.runOnce({ leaveQuiet: true }); // a commit to one table: the others stay at their cursor
   * await syncer.settleQuiet(); // every cursor at the source's position
   */
  async settleQuiet(): Promise<void> {
    for (const [name, hw] of [...this.#behind]) {
      this.#behind.delete(name);
      const at = this.#leftAt.get(name);
      if (at === undefined || at.seq >= hw) continue;
      this.#leftAt.delete(name);
      try {
        const out = await this.applyBatch(name, at.seq, hw);
        if (out.kind !== 'applied' && out.kind !== 'current') continue;
        this.#leftAt.set(name, { ...at, cursor: out.cursor, seq: out.seq, steppedMs: Date.now() });
        // Acknowledged with the next write of the acknowledgements, as a run's position is.
        if ((this.#options.acknowledge ?? true) && out.kind === 'applied')
          this.#pendingAcks.set(syncConsumerName(name, this.#targetKey), out.cursor);
      } catch {
        /* the next run steps it, and reports what fails */
      }
    }
  }

  /**
   * The target's data_version for this pass, read once: #storedMoved and
   * #quiet both ask, microseconds apart, with nothing between that waits
   * (what may wait for the target, storing the set or dropping retired
   * tables, forgets it) and no write of this connection's that it counts
   * (data_version moves for other connections' commits only). Another
   * program's commit after the read is seen by the next pass, as one after
   * the second read was: both compare it with what they last saw.
   */
  #targetVersionNow(): number {
    this.#passTargetVersion ??= targetVersion(this.session.db, TARGET_SCHEMA);
    return this.#passTargetVersion;
  }

  /** The target's data_version read in this pass (#targetVersionNow), until something that may wait. */
  #passTargetVersion: number | undefined;

  /**
   * The projections this run leaves at their cursor (RunOptions.leaveQuiet,
   * quiet-projections.ts), with the high-water mark that was read at; none
   * when the run is not a follower's or `usual` is false (a re-arm, a
   * reinit, the projection set stored: every step runs). Forgets where the
   * steps left the projections when another program committed to the target.
   */
  #quiet(run: RunOptions, usual: boolean): ReturnType<typeof quietProjections> {
    // (One projection: the pass is for it, nothing to leave.)
    if (run.leaveQuiet !== true || this.projections.length < 2) return undefined;
    const version = this.#targetVersionNow();
    if (version !== this.#targetVersion) this.#leftAt.clear();
    this.#targetVersion = version;
    if (!usual || this.#leftAt.size === 0) return undefined;
    return quietProjections(this.session.db, this.projections, this.#leftAt, Date.now());
  }

  /**
   * The projections the source acknowledges for this target that it does
   * not hold and this run does not build (consumers.ts: reported, exit 3),
   * after forgetting the acknowledgements of those `sluice drop` removed
   * (each in a short source transaction; one that cannot be written now is
   * left for the next run) and clearing their drop records.
   */
  #checkConsumers(): { readonly lost: readonly LostProjection[]; readonly forgotten: readonly string[] } {
    const db = this.session.db;
    const held = new Set([
      ...this.#projections.map((p) => p.name),
      ...this.#broken.map((b) => b.name),
      ...this.#refused.map((r) => r.name),
      ...readProjections(db, TARGET_SCHEMA).map((r) => r.name),
    ]);
    const check = checkConsumers(
      db,
      db,
      TARGET_SCHEMA,
      { targetKey: this.#targetKey, targetFile: this.#targetFile, sourcePath: this.session.sourcePath },
      held,
    );
    const forgotten: string[] = [];
    const cleared = [...check.rebuilt];
    for (const c of check.dropped) {
      try {
        forgetConsumer(db, c.name);
        this.#ackedCursors.delete(c.name);
        forgotten.push(c.name);
        cleared.push(c.projection as string);
      } catch {
        /* acknowledgements are informational: the next run forgets it */
      }
    }
    if (cleared.length > 0) writeAlone(db, () => clearDrops(db, TARGET_SCHEMA, cleared));
    return { lost: check.lost, forgotten };
  }

  /**
   * The projections this syncer runs are fed by its source: a row an import
   * or a subscriber made (no source path, so health could not read a lag
   * for it) or one synced from another path says so from now on (one short
   * target transaction, only when a row says otherwise; best effort, as the
   * next pass tries again). Checked once per projection per syncer.
   */
  #recordSource(): void {
    const db = this.session.db;
    const todo = this.projections.filter((p) => !this.#sourced.has(p.name)).map((p) => p.name);
    if (todo.length === 0) return;
    const sourceId = readState(db)?.sourceId;
    const source = path.resolve(this.session.sourcePath);
    const rows = new Map(readProjections(db, TARGET_SCHEMA).map((r) => [r.name, r]));
    const stale = todo.filter((n) => rows.get(n)?.sourceId === sourceId && rows.get(n)?.sourcePath !== source);
    if (sourceId !== undefined && stale.length > 0) writeAlone(db, () => recordSynced(db, TARGET_SCHEMA, stale, sourceId, source));
    const now = stale.length > 0 ? new Map(readProjections(db, TARGET_SCHEMA).map((r) => [r.name, r])) : rows;
    for (const n of todo) if (now.get(n)?.sourcePath === source) this.#sourced.add(n);
  }

  /**
   * A projection's failure is recorded in its row; one whose first build
   * failed has none yet, and gets one (state building, no cursor), so health
   * shows the failure instead of a target with nothing in it.
   */
  #failedRow(p: CompiledProjection): FailedRow {
    const db = this.session.db;
    return { name: p.name, p, sourceId: () => readState(db)?.sourceId ?? '', sourcePath: path.resolve(this.session.sourcePath) };
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
          acknowledge(db, consumer, cursor, this.#acknowledgedFor(consumer));
          this.#pendingAcks.delete(consumer);
          this.#ackedCursors.set(consumer, cursor);
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

  /** What an acknowledgement records beside the position: the projection's kind and the target file (consumers.ts). */
  #acknowledgedFor(consumer: string): AcknowledgedFor {
    const p = this.#projections.find((x) => syncConsumerName(x.name, this.#targetKey) === consumer);
    return { ...(p === undefined ? {} : { kind: p.kind }), ...(this.#targetFile === undefined ? {} : { targetFile: this.#targetFile }) };
  }

  /**
   * Suspends a stored projection this open could not compile, in its own row
   * (written only when it changes), in a transaction that finds the target
   * still storing the definition it judged. Another program may have
   * replaced it since (a sync given a definition that fits: the repair):
   * then nothing is written, the projection is reported as stored, and the
   * next run compiles the definitions again.
   */
  async #suspendBroken(b: BrokenDefinition): Promise<ProjectionReport> {
    const report = { name: b.name, state: 'suspended' as const, reason: b.reason, detail: b.detail, applied: 0, cursor: null, seq: 0 };
    const db = this.session.db;
    try {
      const judged = await retryBusy(
        async () =>
          withWriteTransaction(db, () => {
            const rec = readProjection(db, TARGET_SCHEMA, b.name);
            if (rec === undefined || rec.definition !== this.#stored.get(b.name)) return false;
            if (rec.state !== 'suspended' || rec.reason !== b.reason || JSON.stringify(rec.detail) !== JSON.stringify(b.detail))
              setState(db, TARGET_SCHEMA, b.name, 'suspended', b.reason, b.detail);
            return true;
          }),
        this.#busyTimeoutMs,
        this.#files,
      );
      if (!judged) {
        this.#storedStale = true;
        return this.#asStored(b.name);
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

  /** The rows of a source table, for progress only: undefined when it cannot be read (the step then says why). */
  #sourceRows(table: string): number | undefined {
    try {
      return Number(
        this.session.db
          .prepare(`SELECT count(*) FROM main.${quoteIdent(table)}`)
          .pluck()
          .get() as bigint,
      );
    } catch {
      return undefined;
    }
  }

  /**
   * Every projection of this syncer as the target stores it now, with the
   * source's high-water mark: a suspended one at the seq it stopped at (a
   * run's report gives it none), one whose last attempt failed with its
   * recorded failure. What a follower that stops says of where it leaves
   * them (its lag, its exit).
   */
  standing(): SyncReport {
    return {
      sourceSeq: this.#sourceHighWater(),
      projections: this.projections.map((p) => {
        const rec = readProjection(this.session.db, TARGET_SCHEMA, p.name);
        const failed =
          rec !== undefined && rec.failures > 0 ? { code: rec.lastErrorCode ?? 'APPLY_FAILED', message: rec.lastError ?? '' } : undefined;
        return { ...this.#asStored(p.name), ...(failed === undefined ? {} : { error: failed }) };
      }),
    };
  }

  /**
   * The active projections whose stored cursor does not continue on the
   * source, by name, with why (a table re-armed, a bump, a restore...): the
   * next sync rebuilds them, and until then their rows may lack changes the
   * source has, how many is not known (health's rule). Read-only, in one
   * read transaction: for a follower's last words, stopped before it
   * rebuilt them.
   */
  cursorBreaks(): Map<string, string> {
    const db = this.session.db;
    const out = new Map<string, string>();
    withReadTransaction(db, () => {
      for (const p of this.projections) {
        const rec = readProjection(db, TARGET_SCHEMA, p.name);
        if (rec?.cursor == null || rec.state !== 'active') continue;
        const v = validateCursor(db, rec.cursor, undefined, {
          allowSchemaWindow: kindOf(p).verification !== undefined,
          tables: [p.source.table],
        });
        if (v.status === 'rebuild') out.set(p.name, v.reason);
      }
    });
    return out;
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
    const base: StepContext = {
      db: this.session.db,
      schema: TARGET_SCHEMA,
      sourcePath: path.resolve(this.session.sourcePath),
      batchSize: this.#options.batchSize ?? kindOf(p).defaultBatch,
      afterLock: this.#afterLock,
      beforeCommit: this.#beforeCommit,
      ...(this.#builds === undefined ? {} : { buildWatch: this.#builds }),
      busy: this.#busy,
      // As between two steps below (a protected rebuild's validation runs between two transactions of one step).
      between: () => {
        this.#between();
        this.checkTarget();
      },
      // Counting events and snapshot rows costs queries: only when someone shows progress.
      ...(this.#options.onProgress === undefined
        ? {}
        : {
            progress: {
              // The stored seq of the run's first step, and the source's high-water mark each step read.
              begin: (seq: number, hw: number) => {
                startSeq ??= seq;
                sourceHw = Math.max(sourceHw, hw);
              },
              snapshotRows: (rows: number, total?: number) => {
                snap = total === undefined ? { rows } : { rows, total };
                progress('snapshot', startSeq ?? 0);
              },
              rows: this.#options.snapshotProgress !== 'start',
            },
          }),
    };
    let ctx: StepContext = reinit ? { ...base, reinit: true } : base;
    let applied = 0;
    // Events of the source's journal handed over to the projection in this run (counted only for progress).
    let sourceEvents = 0;
    // Committed target transactions, for metrics (ProjectionReport.batches / lastCommitMs).
    let commits: Pick<ProjectionReport, 'batches' | 'lastCommitMs'> = {};
    const committed = () => (commits = { batches: (commits.batches ?? 0) + 1, lastCommitMs: Date.now() });
    // What a snapshot in this run adds to the report.
    let built: Pick<ProjectionReport, 'snapshotRows' | 'rebuilt' | 'droppedIndexes' | 'droppedTriggers' | 'swapped'> = {};
    // For progress: the source rows a snapshot in this run has read, of its total (when counted).
    let snap: { readonly rows: number; readonly total?: number } | undefined;
    // A step runs synchronously under its awaits: between two of them, give
    // the event loop a turn, or a signal handler (SIGTERM) only runs once the
    // whole catch-up is done. True when the run must stop here.
    // The range this run covers, for progress: from the stored seq to the
    // source's high-water mark, as the first step read them (a later commit
    // only raises the mark). None yet: a step that stopped before reading
    // (an edit it found) reports from 0.
    let startSeq: number | undefined;
    let sourceHw = 0;
    const startedMs = Date.now();
    const progress = (phase: SyncProgress['phase'], seq: number) => {
      sourceHw = Math.max(sourceHw, seq);
      this.#options.onProgress?.({
        projection: p.name,
        phase,
        seq,
        sourceSeq: phase === 'suspended' ? 0 : sourceHw,
        events: applied,
        sourceEvents,
        sourceTable: p.source.table,
        ...(snap === undefined ? {} : { rows: snap.rows, ...(snap.total === undefined ? {} : { rowsTotal: snap.total }) }),
        startSeq: Math.min(startSeq ?? 0, seq),
        elapsedMs: Date.now() - startedMs,
      });
    };
    const stopHere = async () => {
      if (signal === undefined) return false;
      await new Promise<void>((resolve) => setImmediate(resolve));
      return signal.aborted;
    };
    // runOnce checked the target just before the first step; a long catch-up stops between two batches too.
    for (let first = true; ; first = false) {
      if (!first) this.checkTarget();
      const out: StepOutcome = await step(ctx, p);
      this.#between();
      ctx = base; // a reinit is the first step only
      if (out.kind === 'building') {
        this.session.memoryMap(true); // a (re)build is catch-up work, in a session that was following too
        crashPoint('build-step');
        // A protected rebuild's steps each copy a part in their own transaction: the total is the table's rows when its first step is seen.
        const total = snap?.total ?? (this.#options.onProgress === undefined ? undefined : this.#sourceRows(p.source.table));
        snap = { rows: out.rows, ...(total === undefined ? {} : { total }) };
        progress('snapshot', out.seq);
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
          ...(out.droppedTriggers === undefined ? {} : { droppedTriggers: out.droppedTriggers }),
        };
        // Every source row read: the count's total when there was one (a map's filter may keep fewer rows);
        // a protected rebuild's own count of the rows it copied (its total was counted before the copy).
        const read = out.swapped === true || snap?.total === undefined ? out.rows : snap.total;
        snap = { rows: read, ...(snap?.total === undefined ? {} : { total: read }) };
        progress('snapshot', out.seq);
        if (out.swapped === true) {
          crashPoint('retire');
          // (Asked to stop: the next run drops them.)
          if (signal?.aborted === true) this.#retiredUnchecked = true;
          else await this.#dropRetired();
        }
        if (await stopHere()) return { ...active, applied, ...built, ...commits, stopped: true };
        continue;
      }
      if (out.kind === 'applied') {
        applied += out.events;
        sourceEvents += out.sourceEvents ?? 0;
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

  /** A user's trigger on projection `p`'s tables that no longer compiles, as the failure says it (brokenTriggerProblem), if any. */
  #triggerProblem(p: CompiledProjection): string | undefined {
    const tables = ownedTablesAt(p, p.targetTable);
    return brokenTriggerProblem(this.session.db, TARGET_SCHEMA, [{ name: p.name, tables }], this.session.targetPath, 'sluice sync');
  }

  /** What is wrong with projection `p`'s tables in the target, as health says it (targetTableProblems), if anything. */
  #tableProblem(p: CompiledProjection): string | undefined {
    try {
      const rec = readProjection(this.session.db, TARGET_SCHEMA, p.name);
      if (rec === undefined) return undefined;
      // Only a table that is missing: SQLite's error here is "no such table" (other columns, types and keys suspend it before its batch: batch-path.ts).
      return targetTableProblems(this.session.db, rec, this.session.sourcePath, this.session.targetPath, TARGET_SCHEMA, false)[0];
    } catch {
      return undefined;
    }
  }

  /**
   * Between two of sluice's target transactions: the watch of hand edits
   * reads what others committed (TargetWatch.between), and a scrubbed
   * drop's checkpoint that the watch's own pin kept from finishing (a
   * column left out of capture since: sqlite/scrub.ts) is finished, so its
   * zeroed pages reach the target's file and its -wal is emptied now, not
   * when the follower stops.
   */
  #between(): void {
    this.#watch?.between();
    this.finishScrub();
  }

  /**
   * A scrubbed drop's checkpoint that could not finish (sqlite/scrub.ts:
   * another program's reader held the target's log, or the watch's own pin
   * did) is tried again, at most once a second: between two of sluice's
   * transactions, and from a follower's idle look (idle-edit-check.ts), so
   * that a quiet source does not leave the dropped values in the target's
   * files until its next commit.
   */
  finishScrub(): void {
    const db = this.session.db;
    if (!scrubCheckpointOwed(db) || Date.now() - this.#scrubTriedMs < SCRUB_RETRY_MS) return;
    this.#scrubTriedMs = Date.now();
    this.#watch?.letGoOfLog();
    checkpointScrubbed(db);
  }

  /**
   * Drops the tables a protected rebuild's swap retired, each in a target
   * transaction of its own, with the write lock free before each (as
   * between two steps of the build: a writer waiting since the swap's
   * transaction takes it before the first drop).
   */
  async #dropRetired(): Promise<void> {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, BUILD_STEP_GAP_MS));
      this.checkTarget();
      if (!(await retryBusy(() => dropOneRetired(this.session.db, TARGET_SCHEMA), this.#busyTimeoutMs, this.#files))) return;
      this.#between();
    }
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
        'PROJECTION_NOT_FOUND',
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
      busy: this.#busy,
    };
    return step(ctx, p);
  }

  /**
   * Throws TARGET_GONE when the file at the target's path is no longer the
   * one this syncer opened (deleted or replaced: sqlite/file-identity.ts).
   * Each run checks it before every batch; a follower also while idle.
   * True when the file was written since the last look by something other
   * than a commit (#fileRewritten): what this syncer held of it is
   * forgotten, and the next run reads every projection's stored row (a
   * follower runs one now, so that a restored target catches up).
   */
  checkTarget(): boolean {
    const stamp = checkSameFileStamp(this.session.targetPath, this.#targetFile, 'target');
    if (stamp === this.#targetStamp) return false;
    this.#targetStamp = stamp;
    this.#fileRewritten();
    return true;
  }

  /**
   * The target's file was written under this syncer with no commit to show
   * for it: a checkpoint's copy of the log (this syncer's own, or another
   * program's), or the contents of another file copied over it in place
   * (cp backup.db cache.db: same inode, so no TARGET_GONE). The latter moves
   * no data_version, and in WAL mode SQLite keeps the pages it cached: the
   * follower went on from the cursors it remembered and cached, applied the
   * next event onto the restored rows and wrote its cursor over the
   * restored one (the target missed everything between, and health said
   * ok). Nothing here tells the two apart, and a checkpoint is frequent, so
   * what is dropped is only what is cheap to read again: the pages cached
   * (of the apply connection and the watch's), the cursors the quiet
   * projections were left at (their next step reads the stored row), and
   * the looks at the stored definitions, sources and retired tables.
   */
  #fileRewritten(): void {
    this.session.db.exec('PRAGMA shrink_memory');
    this.#watch?.fileRewritten();
    this.#leftAt.clear();
    this.#behind.clear();
    this.#targetVersion = undefined;
    this.#passTargetVersion = undefined;
    this.#storedLookedAt = undefined;
    this.#sourced.clear();
    this.#retiredUnchecked = true;
  }

  /**
   * Throws SOURCE_REPLACED when the source's path no longer names the file
   * this syncer opened (a copy renamed over it, or deleted), after recording
   * it as every projection's failed attempt, so that health exits 3 with it
   * until a sync succeeds. Each run checks it first, and before every batch
   * (through the cursor it makes or checks); a follower also while idle.
   */
  checkSource(): void {
    try {
      checkHeldFile(this.session.db, 'source');
    } catch (err) {
      if (err instanceof SluiceError) this.#sourceReplaced(err);
      throw err;
    }
  }

  #sourceReplaced(err: SluiceError): never {
    for (const p of this.projections) recordFailureAlone(this.session.db, p.name, err.code, err.message);
    throw err;
  }

  get #busyTimeoutMs(): number {
    return this.#options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  }

  get #files(): { source: string; target: string } {
    return { source: this.session.sourcePath, target: this.session.targetPath };
  }

  /** Each transaction of a step waits out a busy file up to the busy timeout (StepContext.busy). */
  get #busy(): StepContext['busy'] {
    return { timeoutMs: this.#busyTimeoutMs, files: this.#files };
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
    // A protected target's tables of p found unguarded before this step writes (a reinit makes them anew): marked when guarded again.
    if (rebuilds) {
      this.#unguardedAtLock.delete(p.name);
      this.#rebuiltAtLock.add(p.name);
    } else {
      this.#unguardedAtLock.set(p.name, unguardedTables(this.session.db, TARGET_SCHEMA, p.name));
      this.#rebuiltAtLock.delete(p.name);
    }
    const w = this.#watch;
    if (w === undefined) return undefined;
    w.locked();
    this.#builds?.locked(p.name);
    if (!rebuilds) return checkEdited(w, this.session.db, TARGET_SCHEMA, p.name);
    w.settle(p.name);
    return undefined;
  };

  /** Before a step commits: a protected target's guards on the tables it made (protect.ts). */
  readonly #beforeCommit = (p: CompiledProjection): void => {
    // Its tables made anew by this step: what an unguarded table may have taken in is gone, and so is its mark.
    if (this.#rebuiltAtLock.has(p.name)) clearUnguarded(this.session.db, TARGET_SCHEMA, p.name);
    ensureGuards(this.session.db, TARGET_SCHEMA, p.name, this.#unguardedAtLock.get(p.name));
  };
  /** The projections whose step, when it took the lock, was to rebuild them (#afterLock). */
  readonly #rebuiltAtLock = new Set<string>();
  /** Per projection, its tables a protected target held unguarded when its step took the lock (#afterLock). */
  readonly #unguardedAtLock = new Map<string, string[]>();

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
function rearmOrWait(session: ApplySession, busyTimeoutMs: number): Promise<RearmCheck> {
  const rearm = async () => {
    try {
      return checkRearm(session.db);
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
function recordFailureAlone(db: Db, row: string | FailedRow, code: string, message: string): void {
  writeAlone(db, () => recordFailed(db, TARGET_SCHEMA, row, code, message));
}

/** Clears a projection's recorded failures in a target transaction of its own; best effort, as recordFailureAlone. */
function clearFailureAlone(db: Db, name: string): void {
  writeAlone(db, () => clearFailure(db, TARGET_SCHEMA, name));
}
