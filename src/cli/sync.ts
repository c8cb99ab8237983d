import { Command, Option } from 'commander';
import { errorCode, Syncer, type SyncProgress, type SyncReport } from '../index.ts';
import { errorMessage, shellWord, suspensionRepair } from '../internal.ts';
import { lockFollower, type ProcessLock } from '../index.ts';
import { collect, describeRearmed, parseWholeNumber } from './enable.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';
import { follow } from './follow.ts';
import { reportJson } from './sync-json.ts';
import { progressReporter, type ProgressOptions } from './progress.ts';
import { stderr, stdout } from './closed-pipe.ts';
import { FollowTally } from './follow-summary.ts';
import { parseSummaryInterval } from './stream-follow-summary.ts';
import { DefinitionFiles, loadInputs } from '../internal.ts';

export { loadAll, loadInputs } from '../internal.ts';
import { describeInterrupted, SIGNAL_EXIT, trapInterrupt } from './interrupt.ts';
import {
  parseMetricsAddress,
  serveMetrics,
  targetMetrics,
  type MetricsAddress,
  type MetricsServer,
  type SluiceMetrics,
} from './metrics.ts';

/** `paths`: the files the repairs name; `tables`: each projection's source table, for the repairs that name it. */
export function describeReport(
  r: SyncReport,
  paths?: { readonly source: string; readonly target: string; readonly tables?: ReadonlyMap<string, string> },
): string {
  const rearmed =
    r.rearmed === undefined
      ? []
      : [
          `re-armed capture on the source: ${describeRearmed(r.rearmed.tables)}; generation ${r.rearmed.fromGeneration} -> ${r.rearmed.generation}, so the re-armed tables' projections rebuild once (CAPTURE_REARMED)`,
        ];
  const unmirrored = (r.unmirrored ?? []).map(
    (u) =>
      `${u.table}: not mirrored (${u.why})${u.mode === 'images' ? '' : `; to mirror it: sluice enable ${paths === undefined ? 'SOURCE' : shellWord(paths.source)} ${shellWord(u.table)} --mode images`}`,
  );
  const lost = (r.lost ?? []).map((l) => `${l.projection}: CONSUMER_NOT_BUILT: ${l.message}`);
  const forgotten = (r.forgotten ?? []).map(
    (c) => `forgot the acknowledgement ${c} on the source (its projection was dropped with sluice drop)`,
  );
  return [
    ...rearmed,
    ...unmirrored,
    ...forgotten,
    ...r.projections.map((p) => {
      const what =
        p.snapshotRows !== undefined
          ? `${p.rebuilt !== undefined ? `rebuilt (${p.rebuilt})` : 'initialized'} from snapshot: ${p.snapshotRows} rows, then `
          : '';
      if (p.error !== undefined)
        return `${p.name}: FAILED ${p.error.code}: ${p.error.message} (nothing of the failed batch was committed; other projections went on)`;
      const lost = (p.droppedIndexes ?? [])
        .map((d) => `; your index ${d.name} on ${d.table} could not be made again on the rebuilt table (${d.why})`)
        .concat(
          (p.droppedTriggers ?? []).map(
            (d) =>
              `; your trigger ${d.name} on ${d.table} could not be made again on the rebuilt table (${d.why}); to make it again, fix and run: ${d.sql}`,
          ),
        )
        .join('');
      return p.state === 'active'
        ? `${p.name}: ${what}applied ${p.applied} events, at seq ${p.seq}${p.stopped === true ? ' (stopped before catching up)' : ''}${lost}`
        : `${p.name}: SUSPENDED ${p.reason ?? ''} ${JSON.stringify(p.detail ?? {})}; ${suspensionRepair({ ...p, sourceTable: paths?.tables?.get(p.name) }, paths?.source, paths?.target)}`;
    }),
    ...lost,
  ].join('\n');
}

/** Each projection of the sync and its source table. */
export function sourceTables(syncer: Syncer): ReadonlyMap<string, string> {
  return new Map(syncer.projections.map((p) => [p.name, p.source.table]));
}

export function registerSync(program: Command): void {
  program
    .command('sync')
    .description('Bring projections in a target database up to date with a source (snapshot on first run, then incremental).')
    .argument('<source>', 'source SQLite database (capture enabled)')
    .argument('<target>', 'target SQLite database (created if missing)')
    .option(
      '--projection <file>',
      "projection definition file, .json or .ts, or '*' for a mirror of every captured table (repeatable; added to the target's set; default: the target's set, and on a new target '*')",
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
      parseSummaryInterval,
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
  const defs = await loadInputs(opts.projection);
  const progress = progressReporter(opts);
  const tally = new FollowTally();
  const onProgress = (p: SyncProgress) => {
    progress.update(p);
    tally.progress(p);
  };
  // Only a bar, a JSON log or a follower's summaries use progress; asking for it counts each batch's events.
  const needsProgress = progress.active || (opts.follow === true && opts.json !== true);
  const syncer = await Syncer.open(source, target, {
    ...(defs === undefined ? {} : { projections: defs }),
    ...(opts.batch === undefined ? {} : { batchSize: Math.max(1, opts.batch) }),
    ...(opts.busyTimeout === undefined ? {} : { busyTimeoutMs: opts.busyTimeout }),
    ...(opts.maxTargetMb === undefined ? {} : { maxTargetMb: opts.maxTargetMb }),
    reinit: opts.reinit,
    ...(needsProgress ? { onProgress } : {}),
  });
  let lock: ProcessLock | undefined;
  try {
    if (opts.follow === true) {
      // One follower per target (TARGET_FOLLOWED), taken once the target exists, before the first pass.
      lock = lockFollower(target, 'sync --follow');
      // The text of a followed run is its progress; a re-arm at the open is said once, on stderr.
      const say = (line: string) => {
        progress.stop();
        stdout().write(`${line}\n`);
      };
      let saidLost = '';
      const start = `following ${source} into ${target}: ${syncer.projections.map((p) => p.name).join(', ')}; a summary every ${opts.summaryInterval} ms, Ctrl-C to stop`;
      const human = opts.json === true ? {} : { human: { say, tally, summaryIntervalMs: Math.max(1, opts.summaryInterval), start } };
      // A projection that becomes suspended while following (a hand edit seen, a diverged row) is said once, with its repair.
      const suspended = new Set<string>();
      /** The failure said of each projection (said again only when it changes). */
      const failed = new Map<string, string>();
      const standing = await follow(syncer, {
        ...opts,
        ...human,
        ...(opts.projection.length === 0 ? {} : { definitions: new DefinitionFiles(opts.projection) }),
        onLoadError: (err) => {
          const code = errorCode(err);
          stderr().write(
            `sluice: ${typeof code === 'string' ? code : 'BAD_DEFINITION'}: ${String(errorMessage(err))} (the follower keeps the definitions it read before, and reads the files again when they change)\n`,
          );
        },
        onReport: (r) => {
          metrics?.record(r);
          if (opts.json !== true && r.rearmed !== undefined)
            stderr().write(`sluice: ${describeReport({ ...r, projections: [], lost: [], forgotten: [] })}\n`);
          // A projection the target lost is said once (again when the set of them changes), not every pass.
          const lost = (r.lost ?? []).map((l) => `sluice: ${l.projection}: CONSUMER_NOT_BUILT: ${l.message}`).join('\n');
          if (opts.json !== true && lost !== saidLost) {
            if (lost !== '') stderr().write(`${lost}\n`);
            saidLost = lost;
          }
          for (const p of r.projections) {
            // A projection's failure is said once (again when it says something else), not every pass: a definition
            // of this follower's that another sync's repair left behind (the target stores another one) too.
            const failure = p.error === undefined ? undefined : `${p.error.code}: ${p.error.message}`;
            if (failure === undefined) failed.delete(p.name);
            else if (failed.get(p.name) !== failure) {
              failed.set(p.name, failure);
              if (opts.json !== true) stderr().write(`sluice: ${p.name}: FAILED ${failure}\n`);
            }
            // One said suspended and taken up again (its repair made by another sync, a fixed file) is said too.
            if (p.state === 'active' && p.error === undefined && suspended.has(p.name) && opts.json !== true)
              stderr().write(`sluice: ${p.name}: active again, at seq ${p.seq}\n`);
            if (p.state !== 'suspended') suspended.delete(p.name);
            else if (!suspended.has(p.name)) {
              suspended.add(p.name);
              if (opts.json !== true)
                stderr().write(
                  `sluice: ${describeReport({ sourceSeq: r.sourceSeq, projections: [p] }, { source, target, tables: sourceTables(syncer) })}\n`,
                );
            }
          }
        },
      });
      // Stopped by a signal, it exits as a one-shot sync of the target would: 1 when it leaves a projection failed, 3 suspended
      // (one it had not built yet, stopped before its first pass, is neither).
      if (standing?.projections.some((p) => p.error !== undefined) === true) throw new ExitSignal(1);
      if (standing?.projections.some((p) => p.state === 'suspended') === true) throw new ExitSignal(3);
      return;
    }
    // Ctrl-C lets the batch in flight commit and says where the next sync resumes (exit 130).
    const interrupt = trapInterrupt();
    const report = await syncer.runOnce({ signal: interrupt.signal }).finally(() => interrupt.release());
    progress.stop();
    emit(opts, S.syncOutput, reportJson(report), () => describeReport(report, { source, target, tables: sourceTables(syncer) }));
    for (const p of report.projections)
      if (p.error !== undefined) stderr().write(`sluice: ${p.error.code}: projection ${p.name}: ${p.error.message}\n`);
    const signal = interrupt.received();
    if (signal !== undefined) {
      stderr().write(`sluice: ${describeInterrupted(report, signal)}\n`);
      throw new ExitSignal(SIGNAL_EXIT[signal] ?? 130);
    }
    if (report.projections.some((p) => p.error !== undefined)) throw new ExitSignal(1);
    if (report.projections.some((p) => p.state !== 'active') || (report.lost ?? []).length > 0) throw new ExitSignal(3);
  } finally {
    progress.stop();
    syncer.close();
    lock?.release();
  }
}
