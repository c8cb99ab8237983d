import { parentPort, workerData } from 'node:worker_threads';
import { Syncer, type SyncReport } from '../../apply/sync/index.ts';
import { errorCode, errorMessage, FileBusyError, InvalidInputError } from '../../errors.ts';
import { lacksHandler, loadCustomModule, withStoredHandler, type ProjectionDefinition } from '../../projection/index.ts';
import { followSyncer } from '../follow/index.ts';
import { checkDeclaredExclusions, declaredInputs, declaredNothingToMirror, dropUndeclared } from '../index.ts';
import type { PipelineSubscription, PipelineTarget } from '../index.ts';
import { withoutCredentials } from '../../apply/target/index.ts';
import { ownShmFilesIn } from '../../sqlite/index.ts';
import type { FromWorker, TargetWorkerData, ToWorker } from './target-messages.ts';
import type { LogLevel } from './log.ts';
import { PassReports } from './pass-reports.ts';
import { BuildPriority } from './build-priority.ts';
import { PassInFlight } from './pass-in-flight.ts';

/*
 * The worker thread of one target of `sluice run` (target-part.ts starts
 * it): given its declaration as the runner accepted it, opens a Syncer with
 * it and keeps it following through the follow loop `sync --follow` runs
 * (follow/follow.ts), until the part says stop: the batch in flight
 * finishes, nothing more starts, the thread ends. It never reads the
 * pipeline file, which may hold an edit the runner refused. Custom handlers
 * are functions, which cannot be sent to a thread: the thread imports their
 * modules (afresh: a module saved since is taken in).
 */

const port = parentPort;
if (port === null) throw new Error('target-worker.ts runs as a worker thread of sluice run');
const data = workerData as TargetWorkerData;
const say = (m: FromWorker) => port.postMessage(m);
// The main thread owns the `-shm` descriptors this thread reads: it lent those it had, and is given each one opened here.
ownShmFilesIn(data.shm, (h) => say({ type: 'shm', files: [h] }));
const log = (level: LogLevel, event: string, msg: string, extra?: Record<string, unknown>) =>
  say({ type: 'log', level, event, msg, ...(extra === undefined ? {} : { extra }) });

const stop = new AbortController();
port.on('message', (m: ToWorker) => {
  if (m.type === 'stop') stop.abort();
});

/** How often a summary of the events applied is logged (when any were). */
const SUMMARY_MS = 60_000;

async function main(): Promise<void> {
  if (data.via === 'subscribe') return subscribed(data.subscription);
  const { source } = data;
  const target: PipelineTarget = { ...data.declared, projections: await withHandlers(data.declared.projections) };
  checkDeclaredExclusions(source);
  if (data.prune) {
    const dropped = dropUndeclared(target);
    if (dropped.length > 0)
      log('info', 'dropped', `dropped the projections the file no longer declares (prune: true): ${dropped.join(', ')}`, {
        projections: dropped,
      });
  }
  let phase: 'building' | 'following' | undefined;
  // A build runs at a lower priority than the other targets' followers (build-priority.ts).
  const priority = new BuildPriority();
  const setPhase = (p: 'building' | 'following') => {
    if (p !== phase) say({ type: 'phase', phase: p });
    phase = p;
    if (p === 'building') priority.lower();
    else if (!priority.restore()) log('warn', 'priority', 'the target thread could not take its priority back after its build');
  };
  const inFlight = new PassInFlight(data.passes);
  const syncer = await Syncer.open(source.path, target.path, {
    projections: declaredInputs(target.projections),
    // NOTHING_TO_SYNC says the file's fix, as plan does, not `sluice enable --mode images` (which the capture part would undo).
    nothingToMirror: declaredNothingToMirror(source, target),
    onProgress: (p) => {
      inFlight.progressed();
      if (p.phase === 'snapshot') setPhase('building');
    },
    // (The phase is all it shows: a first build copies each table whole, a fifth faster than part by part with its rows counted.)
    snapshotProgress: 'start',
  });
  // Until its first pass is done, a target is building (a first build, or a catch-up at start): /healthz says so.
  setPhase('building');
  try {
    log('info', 'start', `following ${source.path}: ${syncer.projections.map((p) => p.name).join(', ')}`);
    const suspended = new Map<string, string>();
    let applied = 0;
    const passes = new PassReports((projections) => say({ type: 'pass', projections }));
    const timer = setInterval(() => {
      if (applied > 0) log('info', 'applied', `${applied} events applied in the last ${SUMMARY_MS / 1000} s`, { events: applied });
      applied = 0;
    }, SUMMARY_MS);
    try {
      await followSyncer(syncer, {
        signal: stop.signal,
        onPass: (on) => (on ? inFlight.started() : inFlight.ended()),
        onReport: (r: SyncReport) => {
          setPhase('following');
          passes.add(
            r.projections.map(({ name, state, reason, applied, batches, lastCommitMs, error }) => ({
              name,
              state,
              applied,
              ...(reason === undefined ? {} : { reason }),
              ...(batches === undefined ? {} : { batches }),
              ...(lastCommitMs === undefined ? {} : { lastCommitMs }),
              ...(error === undefined ? {} : { error: { code: error.code } }),
            })),
          );
          for (const p of r.projections) {
            applied += p.applied;
            if (p.snapshotRows !== undefined)
              log(
                'info',
                'built',
                `${p.name}: ${p.rebuilt === undefined ? 'built' : `rebuilt (${p.rebuilt})`} from a snapshot of ${p.snapshotRows} rows`,
                { projection: p.name, rows: p.snapshotRows },
              );
            if (p.error !== undefined)
              log(
                'error',
                'failed',
                `${p.name}: ${p.error.code}: ${p.error.message} (nothing of the batch committed; retried at the next pass)`,
                { projection: p.name, code: p.error.code },
              );
            if (p.state === 'suspended') {
              if (suspended.get(p.name) !== p.reason)
                log('warn', 'suspended', `${p.name}: ${p.reason ?? 'SUSPENDED'} ${JSON.stringify(p.detail ?? {})}`, {
                  projection: p.name,
                  code: p.reason ?? null,
                });
              suspended.set(p.name, p.reason ?? '');
            } else if (suspended.delete(p.name)) log('info', 'resumed', `${p.name}: active again`, { projection: p.name });
          }
          for (const l of r.lost ?? [])
            log('warn', 'lost', `${l.projection}: CONSUMER_NOT_BUILT: ${l.message}`, { projection: l.projection });
        },
      });
    } finally {
      clearInterval(timer);
      passes.flush();
    }
    log('info', 'stop', 'stopped after the batch in flight');
  } finally {
    syncer.close();
  }
}

/** A `subscribe` entry: the broker's stream applied to the target until stopped (the broker loaded here, by import()). */
async function subscribed(declared: PipelineSubscription): Promise<void> {
  const sub: PipelineSubscription = { ...declared, projections: await withHandlers(declared.projections) };
  const broker = await import('../../broker/index.ts');
  const defs = declaredInputs(sub.projections).filter((d) => d !== '*');
  // Building (a first build from the snapshot, or a catch-up at start) until its first pass has done its work.
  say({ type: 'phase', phase: 'building' });
  let following = false;
  // A pass that did its work: what it took of the stream committed (or skipped as applied), or nothing to take. Only
  // then is the part ok (its failure cleared, its backoff reset): not once it has planned, before it applied anything.
  const passed = () => {
    if (!following) say({ type: 'phase', phase: 'following' });
    following = true;
    say({ type: 'pass', projections: [] });
  };
  log('info', 'start', `subscribing to source ${sub.sourceId} at ${sub.servers.map(withoutCredentials).join(',')}`);
  await broker.subscribe(sub.path, sub.nats, {
    sourceId: sub.sourceId,
    format: sub.format,
    follow: true,
    signal: stop.signal,
    log: (line) => log('info', 'broker', line),
    onStart: (st) => {
      log(
        'info',
        'following',
        `following stream ${st.stream} ${st.started === 'snapshot' ? 'from its snapshot' : "from the target's cursor"} at seq ${st.seq}`,
      );
      // At the stream's end: nothing to apply, the target is where the stream is.
      if (st.started === 'end') passed();
    },
    onBatch: passed,
    ...(defs.length === 0 ? {} : { projections: defs }),
    ...(declaredInputs(sub.projections).includes('*') ? { mirrorAll: true } : {}),
  });
  log('info', 'stop', 'stopped after the batch in flight');
}

/**
 * The declared projections with their custom handlers, imported in this
 * thread. A handler module that fails to load fails the target (before
 * anything is pruned or synced): recorded in its part with the module's
 * error, retried with backoff, and started again when the module is saved
 * (the runner watches it).
 */
async function withHandlers(entries: PipelineTarget['projections']): Promise<PipelineTarget['projections']> {
  const out: PipelineTarget['projections'][number][] = [];
  for (const e of entries) {
    if (e.kind === 'all') {
      out.push(e);
      continue;
    }
    const definitions: ProjectionDefinition[] = [];
    for (const d of e.definitions)
      definitions.push(lacksHandler(d) ? await withHandler(d, e.kind === 'file' ? e.path : data.pipelineFile) : d);
    out.push({ ...e, definitions });
  }
  return out;
}

/** Custom definition `d`, declared in `file`, with its handler: from its module, or from the definition file that defines it. */
async function withHandler(d: ProjectionDefinition, file: string): Promise<ProjectionDefinition> {
  const failures: InvalidInputError[] = [];
  try {
    if (d.kind !== 'custom' || d.module === undefined) return await withStoredHandler(d);
    const loaded = { ...d };
    await loadCustomModule(loaded, file, file, { onHandlerFailed: (_d, err) => failures.push(err) });
    if (failures.length === 0) return loaded;
  } catch (err) {
    if (!(err instanceof InvalidInputError)) throw err;
    failures.push(err);
  }
  const f = failures[0] as InvalidInputError;
  throw new InvalidInputError(
    f.code,
    `${f.message.replace(/ and run again\.$/, '.')} sluice run loads it again when the module is saved (or on SIGHUP); the other targets keep running.`,
    { cause: f },
  );
}

/** An error's message as run's user reads it: sync's repair of a busy file (run sync again, --busy-timeout) is not one run takes, as run retries by itself. */
function runMessage(err: unknown): string {
  if (err instanceof FileBusyError)
    return `${err.role === 'source' ? 'Source' : 'Target'} ${err.file} is locked: another process held its write lock for more than ${err.timeoutMs} ms (a write transaction it has not committed). Nothing of this batch was committed; sluice run tries again, and goes on once that process commits or ends.`;
  return String(errorMessage(err));
}

main().then(
  () => port.close(),
  (err: unknown) => {
    const code = errorCode(err);
    say({ type: 'failed', code: typeof code === 'string' ? code : 'RUN_PART_FAILED', message: runMessage(err) });
    port.close();
  },
);
