import { Command, Option } from 'commander';
import { loadDefinitions, repairAction, Syncer, type ProjectionDefinition, type SyncProgress, type SyncReport } from '../index.ts';
import { collect, describeRearmed, parseWholeNumber } from './enable.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';
import { follow } from './follow.ts';
import { progressReporter, type ProgressOptions } from './progress.ts';
import { stderr, stdout } from './closed-pipe.ts';
import { FollowTally } from './follow-summary.ts';
import { describeInterrupted, SIGNAL_EXIT, trapInterrupt } from './interrupt.ts';
import {
  parseMetricsAddress,
  serveMetrics,
  targetMetrics,
  type MetricsAddress,
  type MetricsServer,
  type SluiceMetrics,
} from './metrics.ts';

export async function loadAll(files: readonly string[]): Promise<ProjectionDefinition[] | undefined> {
  if (files.length === 0) return undefined;
  const defs: ProjectionDefinition[] = [];
  for (const f of files) defs.push(...(await loadDefinitions(f)));
  return defs;
}

export function describeReport(r: SyncReport, paths?: { readonly source: string; readonly target: string }): string {
  const rearmed =
    r.rearmed === undefined
      ? []
      : [
          `re-armed capture on the source: ${describeRearmed(r.rearmed.tables)}; generation ${r.rearmed.fromGeneration} -> ${r.rearmed.generation}, so the re-armed tables' projections rebuild once (CAPTURE_REARMED)`,
        ];
  return [
    ...rearmed,
    ...r.projections.map((p) => {
      const what =
        p.snapshotRows !== undefined
          ? `${p.rebuilt !== undefined ? `rebuilt (${p.rebuilt})` : 'initialized'} from snapshot: ${p.snapshotRows} rows, then `
          : '';
      if (p.error !== undefined)
        return `${p.name}: FAILED ${p.error.code}: ${p.error.message} (nothing of the failed batch was committed; other projections went on)`;
      const lost = (p.droppedIndexes ?? [])
        .map((d) => `; your index ${d.name} on ${d.table} could not be made again on the rebuilt table (${d.why})`)
        .join('');
      return p.state === 'active'
        ? `${p.name}: ${what}applied ${p.applied} events, at seq ${p.seq}${p.stopped === true ? ' (stopped before catching up)' : ''}${lost}`
        : `${p.name}: SUSPENDED ${p.reason ?? ''} ${JSON.stringify(p.detail ?? {})}; ${repairAction(p.name, p.reason, paths?.source, paths?.target)}`;
    }),
  ].join('\n');
}

export function reportJson(r: SyncReport): unknown {
  return {
    sourceSeq: r.sourceSeq,
    projections: r.projections.map((p) => ({
      name: p.name,
      state: p.state,
      ...(p.reason === undefined ? {} : { reason: p.reason, detail: p.detail }),
      applied: p.applied,
      ...(p.snapshotRows === undefined ? {} : { snapshotRows: p.snapshotRows }),
      ...(p.rebuilt === undefined ? {} : { rebuilt: p.rebuilt }),
      ...(p.swapped === undefined ? {} : { swapped: p.swapped }),
      cursor: p.cursor,
      seq: p.seq,
      ...(p.error === undefined ? {} : { error: p.error }),
      ...(p.stopped === undefined ? {} : { stopped: p.stopped }),
      ...(p.droppedIndexes === undefined ? {} : { droppedIndexes: p.droppedIndexes }),
    })),
    ...(r.rearmed === undefined ? {} : { rearmed: r.rearmed }),
  };
}

export function registerSync(program: Command): void {
  program
    .command('sync')
    .description('Bring projections in a target database up to date with a source (snapshot on first run, then incremental).')
    .argument('<source>', 'source SQLite database (capture enabled)')
    .argument('<target>', 'target SQLite database (created if missing)')
    .option(
      '--projection <file>',
      'projection definition file, .json or .ts (repeatable; default: mirror every captured table)',
      collect,
      [] as string[],
    )
    .option(
      '--batch <n>',
      'most events per target transaction (default: 100000 for mirror, map and fts5, 10000 for custom)',
      parseWholeNumber,
    )
    .option('--follow', 'keep running and apply changes as they commit, until SIGINT/SIGTERM')
    .addOption(
      new Option(
        '--metrics <host:port>',
        'with --follow, serve Prometheus metrics at http://HOST:PORT/metrics (docs/metrics.md)',
      ).argParser(parseMetricsAddress),
    )
    .option(
      '--summary-interval <ms>',
      'with --follow, without --json: print a one-line summary (events applied, lag) this often',
      parseWholeNumber,
      60_000,
    )
    .option(
      '--busy-timeout <ms>',
      "wait at most this many ms for another process holding the target's (or, to re-arm capture, the source's) write lock, then fail with TARGET_BUSY / SOURCE_BUSY, exit 1 (default 5000)",
      parseWholeNumber,
    )
    .option(
      '--max-target-mb <n>',
      'let the target grow to at most n MB in this run: a batch that would grow it past that fails as on a full disk (TARGET_FULL, exit 1), nothing of it committed',
      parseWholeNumber,
    )
    .option(
      '--reinit <name>',
      'rebuild this projection from a snapshot first, whatever its state, e.g. once the cause of a suspension is fixed (repeatable)',
      collect,
      [] as string[],
    )
    // choices(): an unknown format is a usage error (exit 2), not silently no log.
    .addOption(new Option('--log <format>', 'with "json", write line-delimited progress to stderr').choices(['json']))
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice sync app.db cache.db\n  $ sluice sync app.db cache.db --projection projections/issues-search.json --follow\n  $ sluice sync app.db cache.db --follow --metrics 127.0.0.1:9464\n  $ sluice sync app.db cache.db --reinit issues   # after a TARGET_DIVERGED suspension',
    )
    .action(async (source: string, target: string, opts: SyncCliOptions & { metrics?: MetricsAddress }, command: Command) => {
      if (opts.metrics !== undefined && opts.follow !== true) command.error("error: option '--metrics <host:port>' needs --follow");
      // Bound before anything is opened: a port in use fails with one line, and nothing is synced.
      const metrics = opts.metrics === undefined ? undefined : targetMetrics(target);
      const server: MetricsServer | undefined =
        metrics === undefined || opts.metrics === undefined ? undefined : await serveMetrics(metrics, opts.metrics);
      try {
        await runSync(source, target, opts, metrics);
      } finally {
        await server?.close();
      }
    });
}

type SyncCliOptions = {
  projection: string[];
  batch?: number;
  follow?: boolean;
  busyTimeout?: number;
  maxTargetMb?: number;
  reinit: string[];
  log?: string;
  summaryInterval: number;
} & ProgressOptions;

async function runSync(source: string, target: string, opts: SyncCliOptions, metrics: SluiceMetrics | undefined): Promise<void> {
  const defs = await loadAll(opts.projection);
  const progress = progressReporter(opts);
  const tally = new FollowTally();
  const onProgress = (p: SyncProgress) => {
    progress.update(p);
    tally.progress(p);
  };
  // Only a bar, a JSON log or a follower's summaries use progress; asking for it costs queries on every pass.
  const needsProgress = progress.active || (opts.follow === true && opts.json !== true);
  const syncer = await Syncer.open(source, target, {
    ...(defs === undefined ? {} : { projections: defs }),
    ...(opts.batch === undefined ? {} : { batchSize: Math.max(1, opts.batch) }),
    ...(opts.busyTimeout === undefined ? {} : { busyTimeoutMs: opts.busyTimeout }),
    ...(opts.maxTargetMb === undefined ? {} : { maxTargetMb: opts.maxTargetMb }),
    reinit: opts.reinit,
    ...(needsProgress ? { onProgress } : {}),
  });
  try {
    if (opts.follow === true) {
      // The text of a followed run is its progress; a re-arm at the open is said once, on stderr.
      const say = (line: string) => {
        progress.stop();
        stdout().write(`${line}\n`);
      };
      const start = `following ${source} into ${target}: ${syncer.projections.map((p) => p.name).join(', ')}; a summary every ${opts.summaryInterval} ms, Ctrl-C to stop`;
      const human = opts.json === true ? {} : { human: { say, tally, summaryIntervalMs: Math.max(1, opts.summaryInterval), start } };
      // A projection that becomes suspended while following (a hand edit seen, a diverged row) is said once, with its repair.
      const suspended = new Set<string>();
      await follow(syncer, {
        ...opts,
        ...human,
        onReport: (r) => {
          metrics?.record(r);
          if (opts.json !== true && r.rearmed !== undefined) stderr().write(`sluice: ${describeReport({ ...r, projections: [] })}\n`);
          for (const p of r.projections) {
            if (p.state !== 'suspended') suspended.delete(p.name);
            else if (!suspended.has(p.name)) {
              suspended.add(p.name);
              if (opts.json !== true)
                stderr().write(`sluice: ${describeReport({ sourceSeq: r.sourceSeq, projections: [p] }, { source, target })}\n`);
            }
          }
        },
      });
      return;
    }
    // Ctrl-C lets the batch in flight commit and says where the next sync resumes (exit 130).
    const interrupt = trapInterrupt();
    const report = await syncer.runOnce({ signal: interrupt.signal }).finally(() => interrupt.release());
    progress.stop();
    emit(opts, S.syncOutput, reportJson(report), () => describeReport(report, { source, target }));
    for (const p of report.projections)
      if (p.error !== undefined) stderr().write(`sluice: ${p.error.code}: projection ${p.name}: ${p.error.message}\n`);
    const signal = interrupt.received();
    if (signal !== undefined) {
      stderr().write(`sluice: ${describeInterrupted(report, signal)}\n`);
      throw new ExitSignal(SIGNAL_EXIT[signal] ?? 130);
    }
    if (report.projections.some((p) => p.error !== undefined)) throw new ExitSignal(1);
    if (report.projections.some((p) => p.state !== 'active')) throw new ExitSignal(3);
  } finally {
    progress.stop();
    syncer.close();
  }
}
