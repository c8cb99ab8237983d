import fs from 'node:fs';
import type { Command } from 'commander';
import {
  checkPipelineSources,
  health,
  isReasonCode,
  loadPipeline,
  openDatabase,
  pipelineHealth,
  planPipeline,
  withPlannedChanges,
  REASONS,
  type FedLag,
  type PipelineHealth,
  type ProjectionHealth,
} from '../index.ts';
import { readPipelineQuietly, readProjections, readQuietly } from '../internal.ts';
import * as S from './json-schemas.ts';
import { addNatsOptions, natsAccess, natsConnectionOf, streamName, type NatsCliOptions } from './nats-options.ts';
import { parseWholeNumber } from './enable.ts';
import { emit, ExitSignal } from './output.ts';
import { askRun } from './ask-run.ts';

export function registerHealth(program: Command): void {
  const command = program
    .command('health')
    .description(
      "Show each projection of a target: state, lag (events and ms), failed syncs, whether its cursor can continue, its tables. With --config FILE, every source and target the pipeline file declares, judged against it (missing, undeclared, past its lag bounds), and, while sluice run holds the file, what that process says at its /healthz (a stalled pass, a failing part; asked at the file's listen: without listen it cannot be, and health says so). Read-only. Exits 3 when anything needs action.",
    )
    .argument('[target]', 'target SQLite database (or --config)')
    .option(
      '--config <file>',
      "check every target a pipeline file declares, with the file's lag bounds, and what the file does not declare (projections, captured tables, acknowledgements); while sluice run holds the file, ask its /healthz (the file's listen) what only it knows; writes nothing",
    );
  addNatsOptions(command, {
    optional: true,
    description:
      'for a target fed by sluice subscribe: read the lag from the NATS stream at this URL (default: the URL and stream subscribe recorded in the target; a lag that cannot be read needs action); the other --nats-* options log in there, or to the recorded URL',
  });
  command
    .option('--max-lag-events <n>', 'a projection more than n events behind needs action', parseWholeNumber)
    .option('--max-lag-ms <n>', 'a projection whose oldest unapplied event waited more than n ms needs action', parseWholeNumber)
    .option(
      '--stream <name>',
      "with --nats: the publisher's stream (default: the one subscribe recorded, else SLUICE_<source id>)",
      streamName,
    )
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice health cache.db --max-lag-events 10000 --max-lag-ms 60000 --json\n  $ sluice health subscribed.db --nats nats://127.0.0.1:4222 --max-lag-ms 60000\n  $ sluice health --config sluice.yml',
    )
    .action(async (target: string | undefined, opts: HealthOpts, command: Command) => {
      if (opts.config !== undefined) {
        const given = [
          'maxLagEvents',
          'maxLagMs',
          'nats',
          'natsCreds',
          'natsUser',
          'natsPasswordFile',
          'natsTokenFile',
          'natsTlsCa',
          'natsTlsCert',
          'natsTlsKey',
          'stream',
        ].filter((k) => opts[k as keyof HealthOpts] !== undefined);
        if (target !== undefined || given.length > 0)
          command.error(
            'error: --config checks every target of the pipeline file with its own bounds: pass no target, --max-lag-*, --nats* or --stream with it (the publish and subscribe entries of the file say how to log in)',
          );
        return await pipelineCheck(opts.config, opts);
      }
      if (target === undefined) command.error("error: missing required argument 'target' (or pass --config FILE)");
      // The target held while read (readQuietly; health holds each source it reads): a reader of a WAL file would leave a -wal and -shm.
      const h = await readQuietly([target], async () => {
        const fedLag = await streamLags(target, opts, command);
        return health(target, {
          ...(opts.maxLagEvents === undefined ? {} : { maxLagEvents: opts.maxLagEvents }),
          ...(opts.maxLagMs === undefined ? {} : { maxLagMs: opts.maxLagMs }),
          ...(fedLag === undefined ? {} : { fedLag }),
        });
      });
      emit(opts, S.healthOutput, h, () =>
        h.projections.length === 0 ? 'no projections in this target' : h.projections.map(projectionText).join('\n'),
      );
      if (!h.ok) throw new ExitSignal(3);
    });
}

interface HealthOpts extends NatsCliOptions {
  json?: boolean;
  maxLagEvents?: number;
  maxLagMs?: number;
  stream?: string;
  config?: string;
}

/** `health --config FILE`: every declared source and target, read without leaving a trace. */
async function pipelineCheck(file: string, opts: HealthOpts): Promise<void> {
  // A handler module that fails to load is reported as its target's problem, as sluice run records it.
  const pipeline = await loadPipeline(file, process.env, { handlerFailures: 'record' });
  const read = await readPipelineQuietly(pipeline, async () => {
    // A declared table the source no longer holds (a writer dropped it) is the source's problem, reported beside the rest.
    checkPipelineSources(pipeline, { missingTables: 'leave' });
    // A subscribed target's lag is read from the stream its subscriber reads (the broker is loaded only then).
    const fedLag = new Map<string, ReadonlyMap<string, FedLag>>();
    for (const s of pipeline.subscriptions) {
      if (!fs.existsSync(s.path) || !recordsSubscriber(s.path)) continue;
      const broker = await import('../broker/index.ts');
      // The target records the servers, never how to log in: that is the subscribe entry's (its fields, or its URL's login).
      fedLag.set(s.path, await broker.readRecordedStreamLags(s.path, s.nats));
    }
    return pipelineHealth(pipeline, { fedLag });
  });
  // What the held projections are built from, against what the file declares (plan's reading: nothing written).
  // (A plan that cannot be read, a declared target that is no database, say: health has reported that target already.)
  const h = await planPipeline(pipeline).then(
    (plan) => withPlannedChanges(read, plan),
    () => read,
  );
  // What only a run of this file knows (a stalled pass, a part failing), asked of it while it holds the file.
  const running = await askRun(pipeline);
  const judged: PipelineHealth =
    running === undefined
      ? h
      : { ...h, ok: h.ok && running.problems.length === 0, problems: [...h.problems, ...running.problems], running };
  emit(opts, S.pipelineHealthOutput, judged, () => pipelineText(judged));
  if (!judged.ok) throw new ExitSignal(3);
}

function pipelineText(h: PipelineHealth): string {
  const lines: string[] = [];
  for (const s of h.sources) {
    lines.push(`${s.ok ? 'ok' : '!!'} source ${s.path}${s.seq === null ? '' : ` seq ${s.seq}`}`);
    for (const p of s.problems) lines.push(`   -> ${p}`);
  }
  for (const t of h.targets) {
    lines.push(`${t.ok ? 'ok' : '!!'} target ${t.path}${t.exists ? '' : ' (does not exist)'}`);
    for (const p of t.problems) lines.push(`   -> ${p}`);
    for (const p of t.projections) lines.push(`   ${projectionText(p).replaceAll('\n', '\n   ')}${p.declared ? '' : ' (undeclared)'}`);
  }
  const r = h.running;
  if (r !== undefined) {
    const pid = `run${r.pid === null ? '' : ` pid ${r.pid}`}`;
    if (r.note !== undefined) lines.push(`.. ${pid}: ${r.note}`);
    else lines.push(`${r.problems.length === 0 ? 'ok' : '!!'} ${pid} (${r.healthz ?? ''})`);
    for (const p of r.problems) lines.push(`   -> ${p}`);
  }
  return lines.join('\n');
}

function projectionText(p: ProjectionHealth): string {
  return `${p.needsAction ? '!!' : 'ok'} ${p.name} [${p.kind}] ${p.state}${p.reason !== null ? ` ${p.reason}` : ''} seq ${p.seq}${p.lagEvents !== null ? ` lag ${p.lagEvents} events / ${p.lagMs ?? 0} ms` : ''}${p.problems.map((x) => `\n   -> ${x}`).join('')}${rebuildNote(p)}${p.note === undefined ? '' : `\n   .. ${p.note}`}`;
}

/**
 * The lags health reads from NATS: with --nats, from that URL; without it, a
 * subscribed projection's lag is read where its subscriber reads, the URL
 * and stream the target records. The broker (and the NATS client) is loaded
 * only then: a target no subscriber feeds, the usual one, gets no lags from
 * it either way, and health of it loads no NATS (docs/architecture.md, "Entries").
 */
async function streamLags(
  target: string,
  opts: NatsCliOptions & { stream?: string },
  command: Command,
): Promise<ReadonlyMap<string, FedLag> | undefined> {
  const nats = natsConnectionOf(opts, command);
  if (nats === undefined && !recordsSubscriber(target)) return undefined;
  const broker = await import('../broker/index.ts');
  return nats === undefined
    ? await broker.readRecordedStreamLags(target, natsAccess(opts, command))
    : await broker.readStreamLags(target, nats, opts.stream === undefined ? {} : { stream: opts.stream });
}

/** Whether the target records a projection fed by sluice subscribe (the ones readRecordedStreamLags reads are among them). */
function recordsSubscriber(target: string): boolean {
  if (!fs.existsSync(target)) return false; // health says so itself
  let db;
  try {
    db = openDatabase(target, { readonly: true, role: 'target' });
    return readProjections(db, 'main').some((p) => p.fedBy?.via === 'subscribe');
  } catch {
    return false; // a target health cannot read (a folder, not a database): health reports it
  } finally {
    db?.close();
  }
}

/** A cursor the next sync rebuilds from by itself (of a projection sync steps): not a problem, but said. */
function rebuildNote(p: ProjectionHealth): string {
  const r = p.rebuild;
  if (r === null || !isReasonCode(r) || !(REASONS[r].kinds as readonly string[]).includes('rebuilt')) return '';
  // A sync of it that keeps failing (ALTER_CUSTOM_NO_SHADOW: a rebuild sluice refuses to run) does not rebuild it by itself,
  // nor does one of a suspended projection: it stays suspended until its repair (its problem says which) is done.
  if (p.failure !== null || p.state === 'suspended') return '';
  return `\n   .. the next sluice ${p.fedBy?.via === 'subscribe' ? 'subscribe' : 'sync'} rebuilds it by itself (${r})`;
}
