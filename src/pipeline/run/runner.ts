import fs from 'node:fs';
import path from 'node:path';
import type { FedLag } from '../../apply/check/index.ts';
import { lockFollower } from '../../apply/sync/index.ts';
import { errorCode, errorMessage } from '../../errors.ts';
import type { ProcessLock } from '../../sqlite/index.ts';
import {
  checkPipelineSources,
  handlerModules,
  loadPipeline,
  makeTargetFolder,
  namedFiles,
  probeListen,
  targetFolderProblem,
  SluiceMetrics,
  pipelineHealth,
  planPipeline,
  withPlannedChanges,
} from '../index.ts';
import { DefinitionFiles, stamp } from '../follow/index.ts';
import { moduleImports } from '../../projection/index.ts';
import type { Pipeline, PipelineHealth, PipelinePlan, RunStatus, TargetHealth } from '../index.ts';
import type { RunLog } from './log.ts';
import { SupervisedPart, type RunShared } from './part.ts';
import { PART_KINDS } from './parts.ts';
import { tightenHeapGrowth } from './heap-growth.ts';
import { LISTEN_FIX } from './http-part.ts';
import { lockRun } from './run-lock.ts';
import { configProblems, partProblems } from './run-problems.ts';

/*
 * `sluice run`: one process that keeps a pipeline file true. The runner
 * loads the file, holds the locks (the file's, each declared target's
 * follower lock), starts one supervised part per thing declared
 * (parts.ts), reloads on request (SIGHUP, a change to the file or to a
 * definition file it names) and stops them all on SIGTERM/SIGINT.
 */

/** A handler module that fails to load fails its target's part (its worker says so), not the whole file. */
const RECORD = { handlerFailures: 'record' } as const;

/** /healthz is read at most this often; a scrape or a page refresh in between gets the last reading. */
const HEALTH_CACHE_MS = 250;
/** How often the pipeline file and its definition files are looked at for a change (taken once two looks in a row see the same change: 0.5-1 s after the last write). */
const WATCH_MS = 500;
/** How often a subscribed target's lag is read from its stream (a broker round trip; only when the file subscribes). */
const FED_LAG_MS = 5000;
/**
 * How often the plan health judges the targets by is read again (besides
 * after each reload and each change of a part's state or phase): a plan
 * reads every target against its definitions, a few times what a health
 * reading costs, so it is not read for each request. Each read is about
 * 40 ms of the main thread with 4 targets: every 5 s that was 0.8% of a
 * core, and an idle run measured 2.6% against its 2% target (bench/run.ts);
 * what changes a plan (a reload, a pass, a rebuild, a failure) changes a
 * part's state or phase and reads it again at once.
 */
const PLAN_MS = 30_000;

export class Runner {
  readonly #file: string;
  readonly #log: RunLog;
  readonly #startedMs = Date.now();
  #pipeline: Pipeline;
  #loadedMs = Date.now();
  #configError: RunStatus['run']['configError'] = null;
  readonly #parts = new Map<string, SupervisedPart<unknown>>();
  readonly #runLock: ProcessLock;
  readonly #targetLocks = new Map<string, ProcessLock>();
  readonly #metrics = new SluiceMetrics(() => this.#health().targets.flatMap((t) => t.projections.map((p) => ({ ...p, target: t.path }))), {
    byTarget: true,
  });
  #cached: { readonly ms: number; readonly plan: PipelinePlan | undefined; readonly health: PipelineHealth } | undefined;
  /**
   * What `plan` said of the pipeline (undefined: it could not be read, and health says why), with when the parts last
   * changed state or phase as it was read: once one changes (a build done, a part failing), it is read again before
   * it is applied.
   */
  #plan: { readonly pipeline: Pipeline; readonly parts: string; readonly plan: PipelinePlan | undefined } | undefined;
  #planning: Promise<void> | undefined;
  #planAgain = false;
  #planTimer: NodeJS.Timeout | undefined;
  /** Each subscribed target's lag as its stream says (refreshFedLag); health reads it as `health --config` does. */
  #fedLag = new Map<string, ReadonlyMap<string, FedLag>>();
  #fedLagTimer: NodeJS.Timeout | undefined;
  #watched: DefinitionFiles;
  #watch: NodeJS.Timeout | undefined;
  #reloading: Promise<void> | undefined;
  #again: string | undefined;
  #stopped = false;
  readonly #shared: RunShared;

  private constructor(file: string, pipeline: Pipeline, log: RunLog, runLock: ProcessLock, before: ReadonlyMap<string, string>) {
    this.#file = file;
    this.#pipeline = pipeline;
    this.#log = log;
    this.#runLock = runLock;
    this.#watched = watchedFiles(pipeline, pipeline.file, before);
    this.#shared = {
      pipelineFile: pipeline.file,
      pipeline: () => this.#pipeline,
      recordPass: (target, report) => this.#metrics.record(report, target),
      lockTarget: (target) => this.#lockTarget(target),
      status: () => {
        const s = this.status();
        return { code: s.ok ? 200 : 503, body: s };
      },
      metrics: async () => ({ contentType: this.#metrics.registry.contentType, text: await this.#metrics.scrape() }),
    };
  }

  /**
   * Loads and checks the pipeline file, takes its lock, checks that its
   * `listen` address can be bound, takes every declared target's follower
   * lock (its folder made when missing; one whose folder cannot be made is
   * left to its part, which fails and retries), and starts every part. Throws
   * (nothing written) on a file that does not load, a table that does not
   * exist, another run of this file (RUN_LOCKED), a `listen` address in use
   * (METRICS_LISTEN_FAILED) or a follower of a declared target
   * (TARGET_FOLLOWED).
   */
  static async start(file: string, log: RunLog): Promise<Runner> {
    tightenHeapGrowth(); // a long-lived process of several isolates: memory over GC throughput (heap-growth.ts)
    // The file's stamp before it is read: one saved while it loads is loaded again by the watch.
    const before = new Map([[path.resolve(file), stamp(path.resolve(file))]]);
    const pipeline = await loadPipeline(file, process.env, RECORD);
    checkPipelineSources(pipeline);
    const runLock = lockRun(pipeline.file);
    const runner = new Runner(file, pipeline, log, runLock, before);
    try {
      // Its address taken (another run's, an exporter's): refused now, before anything is made, enabled or built (retried, another process would answer /healthz).
      if (pipeline.listen !== undefined) await probeListen(pipeline.listen, 'listen', LISTEN_FIX);
      // A target whose folder cannot be made (a file in its path, a disk not mounted) is its own part's failure, retried, not the run's.
      for (const t of declaredTargets(pipeline)) if (targetFolderProblem(t) === undefined) runner.#lockTarget(t);
    } catch (err) {
      runner.#releaseLocks();
      throw err;
    }
    log.event('info', 'run', 'start', `running ${pipeline.file} (pid ${process.pid})`, { pid: process.pid });
    await runner.#reconcile();
    runner.#watch = setInterval(() => {
      if (runner.#watched.changedAndSettled()) void runner.reload('a file changed');
    }, WATCH_MS);
    runner.#refreshFedLag();
    runner.#planTimer = setInterval(() => runner.#replan(), PLAN_MS);
    return runner;
  }

  /** Loads the file again and brings the parts to it; a file that does not load keeps the running configuration (configError). */
  async reload(why: string): Promise<void> {
    if (this.#stopped) return;
    if (this.#reloading !== undefined) {
      this.#again = why;
      return this.#reloading;
    }
    this.#reloading = this.#reload(why).finally(() => (this.#reloading = undefined));
    await this.#reloading;
    const again = this.#again;
    this.#again = undefined;
    if (again !== undefined) await this.reload(again);
  }

  async #reload(why: string): Promise<void> {
    let next: Pipeline;
    // Stamps taken before the files are read: a file saved while this reload reads it is loaded again, not taken as loaded.
    // The files the file names, as far as it parses: watched too when it is refused, so that writing or fixing one of them reloads.
    const named = namedFiles(this.#file);
    const before = this.#watched.stampsNow([path.resolve(this.#file), ...named]);
    try {
      next = await loadPipeline(this.#file, process.env, RECORD);
      checkPipelineSources(next);
    } catch (err) {
      const code = errorCode(err);
      this.#configError = {
        code: typeof code === 'string' ? code : 'PIPELINE_INVALID',
        message: String(errorMessage(err)),
        ms: Date.now(),
      };
      this.#watched = watchedFiles(this.#pipeline, path.resolve(this.#file), before, named);
      this.#cached = undefined;
      this.#log.event('error', 'run', 'config-invalid', `${this.#configError.message} (the configuration loaded before keeps running)`, {
        code: this.#configError.code,
      });
      return;
    }
    this.#pipeline = next;
    this.#loadedMs = Date.now();
    this.#configError = null;
    this.#watched = watchedFiles(next, next.file, before);
    this.#cached = undefined;
    this.#log.event('info', 'run', 'reload', `loaded ${next.file} again (${why})`);
    await this.#reconcile();
  }

  /** Stops every part that is no longer declared or whose declaration changed, and starts what is new. */
  async #reconcile(): Promise<void> {
    const wanted = new Map<string, { kind: (typeof PART_KINDS)[number]; config: unknown }>();
    for (const kind of PART_KINDS)
      for (const config of kind.configs(this.#pipeline)) wanted.set(`${kind.kind}:${kind.name(config)}`, { kind, config });
    const going = [...this.#parts].filter(([key, part]) => {
      const w = wanted.get(key);
      return w === undefined || w.kind.fingerprint(w.config) !== part.fingerprint;
    });
    await Promise.all(
      going.map(async ([key, part]) => {
        // Listed until it has stopped (its state 'stopping'), so that status shows a target no part follows meanwhile.
        await part.stop();
        if (this.#parts.get(key) === part) this.#parts.delete(key);
      }),
    );
    const declared = new Set(declaredTargets(this.#pipeline));
    for (const [target, lock] of this.#targetLocks)
      if (!declared.has(target)) {
        lock.release();
        this.#targetLocks.delete(target);
      }
    const fresh = [...wanted].filter(([key]) => !this.#parts.has(key));
    for (const first of [true, false]) {
      const started = fresh
        .filter(([, w]) => (w.kind.first === true) === first)
        .map(([key, w]) => {
          const part = new SupervisedPart(w.kind, w.config, this.#log.part(key));
          this.#parts.set(key, part);
          part.start(this.#shared);
          return part;
        });
      if (first) await Promise.all(started.map((p) => p.firstAttempt()));
    }
    this.#cached = undefined;
    this.#replan();
  }

  /** SIGTERM/SIGINT: every part finishes what is in flight and stops; the locks are released. */
  async stop(signal: string): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#watch);
    clearTimeout(this.#fedLagTimer);
    clearInterval(this.#planTimer);
    this.#log.event('info', 'run', 'stop', `${signal}: finishing the batches in flight`);
    await this.#reloading;
    await this.#planning;
    await Promise.all([...this.#parts.values()].map((p) => p.stop()));
    this.#releaseLocks();
    this.#log.event('info', 'run', 'stopped', 'every part stopped');
  }

  /** What /healthz serves. */
  status(): RunStatus {
    const h = this.#health();
    const parts = [...this.#parts.values()].map((p) => p.status());
    const building = new Set(parts.filter((p) => p.kind === 'target' && p.phase === 'building').map((p) => p.name));
    const targets = h.targets.map((t): TargetHealth => {
      if (!building.has(t.path)) return t;
      const why = `${t.path}: building from a snapshot (sluice run follows it once built)`;
      return {
        ...t,
        ok: false,
        projections: t.projections.map((p) => (p.state === 'missing' ? { ...p, state: 'building' } : p)),
        problems: [...t.problems, why],
      };
    });
    const problems = [...configProblems(this.#file, this.#configError), ...h.problems, ...partProblems(parts)];
    return {
      ...h,
      ok: problems.length === 0,
      targets,
      problems,
      run: {
        pid: process.pid,
        startedMs: this.#startedMs,
        configError: this.#configError,
        loadedMs: this.#loadedMs,
        parts,
      },
    };
  }

  /**
   * The pipeline's health as `health --config` judges it (withPlannedChanges:
   * what plan says the file's definitions do to each target), from the last
   * plan read of this configuration in the parts' present states; none yet
   * (being read again), the targets as they are.
   */
  #health(): PipelineHealth {
    const now = Date.now();
    const p = this.#plan;
    const current = p !== undefined && p.pipeline === this.#pipeline && p.parts === this.#partStates();
    // (One in flight read the parts as they were when it began: once it is done, the next reading sees whether it is current.)
    if (!current && this.#planning === undefined) this.#replan();
    const plan = current ? p.plan : undefined;
    if (this.#cached === undefined || now - this.#cached.ms >= HEALTH_CACHE_MS || this.#cached.plan !== plan) {
      const read = pipelineHealth(this.#pipeline, { now, fedLag: this.#fedLag });
      this.#cached = { ms: now, plan, health: plan === undefined ? read : withPlannedChanges(read, plan) };
    }
    return this.#cached.health;
  }

  /** When each part last changed its state or phase: a plan read before such a change may no longer hold (a rebuild done). */
  #partStates(): string {
    return [...this.#parts.values()].map((part) => part.changed).join(',');
  }

  /** Reads the plan of the running configuration again, in the background (once more after the read in flight, if one is). */
  #replan(): void {
    if (this.#stopped) return;
    if (this.#planning !== undefined) {
      this.#planAgain = true;
      return;
    }
    const pipeline = this.#pipeline;
    const parts = this.#partStates();
    this.#planning = planPipeline(pipeline)
      .then(
        (plan) => (this.#plan = { pipeline, parts, plan }),
        // (A plan that cannot be read, a declared target that is no database, say: health reports that target itself.)
        () => (this.#plan = { pipeline, parts, plan: undefined }),
      )
      .then(() => {
        this.#planning = undefined;
        this.#cached = undefined;
        if (this.#planAgain) {
          this.#planAgain = false;
          this.#replan();
        }
      });
  }

  /**
   * A subscribed target's lag is its stream's: read through the broker
   * (loaded only when the file subscribes), with the entry's login and TLS,
   * now and every FED_LAG_MS. One that cannot be read is left out, and
   * health says its lag is unknown.
   */
  #refreshFedLag(): void {
    const subs = this.#pipeline.subscriptions;
    const next = async (): Promise<void> => {
      if (subs.length === 0) return;
      const broker = await import('../../broker/index.ts');
      const lags = new Map<string, ReadonlyMap<string, FedLag>>();
      for (const s of subs) {
        if (!fs.existsSync(s.path)) continue;
        try {
          lags.set(s.path, await broker.readRecordedStreamLags(s.path, s.nats));
        } catch {
          // The stream cannot be read now: health reports the lag as unknown.
        }
      }
      this.#fedLag = lags;
      this.#cached = undefined;
    };
    void next()
      .catch(() => undefined)
      .finally(() => {
        if (!this.#stopped) this.#fedLagTimer = setTimeout(() => this.#refreshFedLag(), FED_LAG_MS);
      });
  }

  /** Takes a declared target's follower lock, its folder made first when missing (a new machine: the file declares the target). */
  #lockTarget(target: string): void {
    if (this.#targetLocks.has(target)) return;
    makeTargetFolder(target);
    this.#targetLocks.set(target, lockFollower(target, `run --config ${this.#pipeline.file}`));
  }

  #releaseLocks(): void {
    for (const lock of this.#targetLocks.values()) lock.release();
    this.#targetLocks.clear();
    this.#runLock.release();
  }
}

function declaredTargets(p: Pipeline): string[] {
  return p.sources.flatMap((s) => s.targets.map((t) => t.path));
}

/**
 * The pipeline file and every definition file and handler module it names (`file`: the pipeline file when it no longer
 * loads; `named`: then the files it names as far as it parses, beside those of the configuration kept).
 */
function watchedFiles(
  p: Pipeline,
  file: string = p.file,
  before?: ReadonlyMap<string, string>,
  named: readonly string[] = [],
): DefinitionFiles {
  const defs = [...p.sources.flatMap((s) => s.targets), ...p.subscriptions]
    .flatMap((t) => [...t.projections.flatMap((e) => (e.kind === 'file' ? [e.path] : [])), ...handlerModules(t.projections)])
    // And the files such a module imports (a shared constant, a helper): an edit of one is an edit of the definition.
    .flatMap((f) => [f, ...moduleImports(f)]);
  return new DefinitionFiles([...new Set([file, ...defs, ...named])], before);
}
