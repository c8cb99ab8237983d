import { Worker } from 'node:worker_threads';
import { declaredInputs, handlerModules, makeTargetFolder } from '../index.ts';
import { stamp } from '../follow/index.ts';
import type { PipelineSource, PipelineSubscription, PipelineTarget } from '../index.ts';
import { PartFailure, type PartContext, type PartKind } from './part.ts';
import type { FromWorker, TargetWorkerData, ToWorker } from './target-messages.ts';
import { adoptShmFiles, lendShmFiles } from '../../sqlite/index.ts';
import { PassInFlight, STALLED_PASS_MS } from './pass-in-flight.ts';

/*
 * A declared target, followed in a worker thread of its own
 * (target-worker.ts): better-sqlite3 is synchronous, so a first build of a
 * million rows or a custom handler that loops blocks only its own thread,
 * never another target or the HTTP server. Threads, not processes: one
 * process's memory for every target (bench/run.ts measures both).
 */

export interface TargetConfig {
  readonly source: PipelineSource;
  readonly target: PipelineTarget;
  /** The file's `prune`: the worker drops what the target holds and the file does not declare. */
  readonly prune: boolean;
}

/** The worker's module beside this one: .js in the build (dist/), .ts when run from the sources. */
/**
 * How long a stopped worker may take to finish what is in flight before it
 * is terminated (a handler that loops never gets to the stop message).
 * SLUICE_STOP_GRACE_MS sets another for the process (a hook for the tests).
 */
const STOP_GRACE_MS = graceMs(process.env.SLUICE_STOP_GRACE_MS);

function graceMs(env: string | undefined): number {
  if (env === undefined) return 30_000;
  if (!/^[1-9][0-9]{0,8}$/.test(env)) throw new Error(`SLUICE_STOP_GRACE_MS=${env}: not a whole number of ms from 1 to 999999999`);
  return Number(env);
}

const WORKER = new URL(`./target-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export const targetPart: PartKind<TargetConfig> = {
  kind: 'target',
  configs: (pipeline) => pipeline.sources.flatMap((source) => source.targets.map((target) => ({ source, target, prune: pipeline.prune }))),
  name: (c) => c.target.path,
  // A changed declaration restarts the worker: its Syncer opens with the new definitions, and continues, rebuilds or refuses each as sync does.
  // A handler module saved again restarts it too: the new thread imports it afresh (this process's import of it is cached).
  fingerprint: (c) =>
    JSON.stringify([
      c.source.path,
      declaredInputs(c.target.projections),
      c.prune,
      handlerModules(c.target.projections).map(stamp),
      // A changed exclude restarts the worker too: it syncs only once the source captures none of the columns left out.
      c.source.capture.map((t) => [t.table, t.exclude ?? null]),
    ]),
  async run(c, ctx) {
    ctx.shared.lockTarget(c.target.path); // its folder made first, when missing
    const young = handlerModules(c.target.projections).length > 0 ? YOUNG_MB.handlers : YOUNG_MB.setBased;
    const shm = lendShmFiles([c.source.path, c.target.path]);
    const passes = new PassInFlight();
    ctx.stall(() => {
      // The bound the file says now (a reload that changes only it restarts nothing).
      const declared = ctx.shared
        .pipeline()
        .sources.flatMap((s) => s.targets)
        .find((t) => t.path === c.target.path);
      const boundMs = declared?.health.maxPassMs ?? c.target.health.maxPassMs ?? STALLED_PASS_MS;
      const sinceMs = passes.stalledSince(boundMs);
      return sinceMs === undefined ? undefined : { sinceMs, boundMs };
    });
    // The declaration this part was started with (its fingerprint's), not the file as it is now: a later edit the runner refused stays out.
    const data: TargetWorkerData = {
      via: 'sync',
      pipelineFile: ctx.shared.pipelineFile,
      target: c.target.path,
      source: { ...c.source, targets: [] },
      declared: { ...c.target, projections: withoutHandlers(c.target.projections) },
      prune: c.prune,
      shm,
      passes: passes.buffer,
    };
    await runWorker(data, ctx, young);
  },
};

/*
 * A `subscribe` entry: a target fed from the broker (the source is on
 * another machine), in a worker thread too (its applies are as synchronous
 * as a sync's). subscribe() takes the target's follower lock itself.
 */
export const subscribePart: PartKind<PipelineSubscription> = {
  kind: 'subscribe',
  configs: (pipeline) => pipeline.subscriptions,
  name: (s) => s.path,
  fingerprint: (s) =>
    JSON.stringify([s.nats, s.sourceId, s.format, declaredInputs(s.projections), handlerModules(s.projections).map(stamp)]),
  async run(s, ctx) {
    makeTargetFolder(s.path);
    const data: TargetWorkerData = {
      via: 'subscribe',
      pipelineFile: ctx.shared.pipelineFile,
      target: s.path,
      subscription: { ...s, projections: withoutHandlers(s.projections) },
      shm: lendShmFiles([s.path]),
      passes: new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT), // (a subscriber's applies are not tracked here)
    };
    await runWorker(data, ctx, YOUNG_MB.handlers);
  },
};

/** A declaration as a thread can be sent it: a custom definition without its handler (functions cannot be), which the thread imports again. */
function withoutHandlers(entries: PipelineTarget['projections']): PipelineTarget['projections'] {
  return entries.map((e) =>
    e.kind === 'all'
      ? e
      : {
          ...e,
          definitions: e.definitions.map((d) => {
            if (d.kind !== 'custom') return d;
            const { handler: _handler, ...data } = d;
            return data;
          }),
        },
  );
}

/**
 * The young generation of a target's worker thread (MB), smaller than V8's
 * default: most of a worker's memory is its V8 heap, and a follower's
 * garbage is short-lived. bench/run.ts measured a run of 4 targets at 246 MB
 * peak RSS by default, 196-214 MB with 8 MB, 181-190 MB with 4 MB (3 runs
 * each), with no difference in CPU or p99 the load of the machine let it
 * see. 2 MB took about 10 MB more off 4 workers (peak RSS 174-182 MB against
 * 186-191 MB, 3 interleaved runs, load 12) with no more CPU while following
 * (2.6-3.6 s against 3.1-4.8 s for 5,000 writes), and no measurable change
 * to a first build of 500,000 rows by a mirror and an fts5 index (their
 * work is SQLite's); but a custom handler's build, which runs JavaScript
 * per row, used about 7% more CPU (5.1-5.3 s against 4.9-5.1 s): a target
 * with a custom handler, and a subscribed one (the broker's client), keep
 * 4 MB.
 */
const YOUNG_MB = { setBased: 2, handlers: 4 } as const;

/** Runs a target's worker thread until it ends: resolves when it was asked to stop, rejects with its failure otherwise. */
async function runWorker(data: TargetWorkerData, ctx: PartContext, youngMb: number): Promise<void> {
  const worker = new Worker(WORKER, {
    workerData: data,
    ...(WORKER.pathname.endsWith('.ts') ? { execArgv: ['--import', 'tsx'] } : {}),
    stderr: false,
    resourceLimits: { maxYoungGenerationSizeMb: youngMb },
    // Node closes the descriptors a thread opened when it ends, by default: closing a `-shm` releases SQLite's locks on
    // it, the other threads' included (sqlite/shm-files.ts). This thread owns them instead (the 'shm' messages).
    // On Windows a lock is its handle's: closing releases nothing of SQLite's, and Node's tracking stays.
    trackUnmanagedFds: process.platform === 'win32',
  });
  let failure: PartFailure | undefined;
  let grace: NodeJS.Timeout | undefined;
  const stop = () => {
    worker.postMessage({ type: 'stop' } satisfies ToWorker);
    // Terminated, its transaction not committed (better-sqlite3 closes the thread's connections as it goes, which
    // rolls back and lets go of the target's locks): what it had not committed is applied again by the next worker.
    grace = setTimeout(() => {
      ctx.log(
        'error',
        'terminated',
        `the worker of target ${data.target} did not stop within ${STOP_GRACE_MS} ms (a custom handler that loops, or a batch that long): terminated, and what it had not committed was not`,
      );
      void worker.terminate();
    }, STOP_GRACE_MS);
    grace.unref();
  };
  ctx.signal.addEventListener('abort', stop, { once: true });
  try {
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (m: FromWorker) => {
        if (m.type === 'log') ctx.log(m.level, m.event, m.msg, m.extra);
        else if (m.type === 'pass') {
          ctx.shared.recordPass(data.target, m);
          ctx.ok();
        } else if (m.type === 'phase') ctx.phase(m.phase);
        else if (m.type === 'shm') adoptShmFiles(m.files);
        else failure = new PartFailure(m.code, m.message);
      });
      worker.on('error', (err) => (failure ??= PartFailure.of(err)));
      worker.on('exit', (code) => {
        if (failure !== undefined) reject(failure);
        else if (ctx.signal.aborted) resolve();
        else
          reject(
            new PartFailure('RUN_PART_FAILED', `the worker of target ${data.target} ended (exit code ${code}) without being asked to`),
          );
      });
    });
  } finally {
    clearTimeout(grace);
    ctx.signal.removeEventListener('abort', stop);
  }
}
