import { Option, type Command } from 'commander';
import type { NatsConnection, subscribe, SubscribedBatch } from '../broker/index.ts';
import { addNatsOptions, natsConnectionOf, streamName, type NatsCliOptions } from './nats-options.ts';
import { collect } from './enable.ts';
import { loadInputs } from './sync.ts';
import { withoutCredentials } from '../internal.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';
import { exitFor, projectionLine } from './import.ts';
import { stderr, stdout } from './closed-pipe.ts';
import { startSummaries, StreamFollowTally, summaryIntervalOption } from './stream-follow-summary.ts';
import { parseMetricsAddress, serveMetrics, type MetricsAddress, type MetricsServer } from './metrics.ts';
import { subscriberMetrics, type SubscriberMetrics } from './broker-metrics.ts';
import { trapInterrupt } from './interrupt.ts';

export function registerSubscribe(program: Command): void {
  const command = program
    .command('subscribe')
    .description(
      "Apply a source's JetStream stream to a target, with the same cursor rules and checks as sync and import (the target's cursor is the truth).",
    )
    .argument('<target>', 'target SQLite database (created if missing)');
  addNatsOptions(command, { description: 'NATS server URL, e.g. nats://127.0.0.1:4222' })
    .requiredOption('--source <id>', 'the source id to apply (sluice status <db> shows it)')
    .option('--stream <name>', "the publisher's stream (default SLUICE_<source id>)", streamName)
    .addOption(
      new Option('--format <format>', 'the batches to apply: jsonl, or segment (the publisher must publish it: publish --format)')
        .choices(['jsonl', 'segment'])
        .default('jsonl'),
    )
    .option(
      '--projection <file>',
      "projection definition file (repeatable; default: the target's, or a mirror of every table in the snapshot); '*' for a mirror of every table the stream carries, also of one the source captures later",
      collect,
      [] as string[],
    )
    .option('--follow', 'keep applying new batches until SIGINT/SIGTERM')
    .addOption(summaryIntervalOption('events applied, the seq reached, the messages waiting'))
    .option('--json', 'print one JSON object on exit')
    .option(
      '--metrics <host:port>',
      'with --follow, serve Prometheus metrics at http://HOST:PORT/metrics (docs/metrics.md)',
      parseMetricsAddress,
    )
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice subscribe cache.db --nats nats://127.0.0.1:4222 --source 1b4e28ba-2fa1-11d2-883f-0016d3cca427\n  $ sluice subscribe search.db --nats nats://127.0.0.1:4222 --source 1b4e28ba-2fa1-11d2-883f-0016d3cca427 --projection projections/issues-search.json --follow\n  $ sluice subscribe cache.db --nats nats://127.0.0.1:4222 --source 1b4e28ba-2fa1-11d2-883f-0016d3cca427 --follow --metrics 127.0.0.1:9466',
    )
    .action(
      async (
        target: string,
        opts: NatsCliOptions & {
          source: string;
          stream?: string;
          format: 'jsonl' | 'segment';
          projection: string[];
          follow?: boolean;
          json?: boolean;
          metrics?: MetricsAddress;
          summaryInterval: number;
        },
        command: Command,
      ) => {
        if (opts.metrics !== undefined && opts.follow !== true) command.error("error: option '--metrics <host:port>' needs --follow");
        const nats = natsConnectionOf(opts, command) as NatsConnection; // --nats is required
        // The broker, and the NATS client with it, is loaded only by the commands that talk to NATS (docs/architecture.md, "Entries").
        const broker = await import('../broker/index.ts');
        const inputs = await loadInputs(opts.projection);
        const defs = inputs?.filter((d) => d !== '*');
        const mirrorAll = inputs?.includes('*') === true;
        const stream = { sourceId: opts.source, ...(opts.stream === undefined ? {} : { stream: opts.stream }) };
        let metrics: SubscriberMetrics | undefined;
        let server: MetricsServer | undefined;
        if (opts.metrics !== undefined) {
          metrics = await subscriberMetrics(target, nats, stream);
          try {
            server = await serveMetrics(metrics.metrics, opts.metrics);
          } catch (err) {
            await metrics.close();
            throw err;
          }
        }
        const interrupt = trapInterrupt();
        // Human mode of a follower: a start line, a summary every --summary-interval, a last line (as sync --follow).
        const tally = opts.follow === true && opts.json !== true ? new StreamFollowTally('applied') : undefined;
        let last: SubscribedBatch | undefined;
        const where = () =>
          last === undefined ? 'nothing received yet' : `at seq ${last.toSeq}, ${last.pending} messages waiting on the stream`;
        let stopSummaries: (() => void) | undefined;
        let r: Awaited<ReturnType<typeof subscribe>>;
        try {
          r = await broker.subscribe(target, nats, {
            ...stream,
            format: opts.format,
            onBatch: (b) => {
              metrics?.onBatch(b);
              last = b;
              if (b.applied && !b.snapshot) tally?.batch(b.events);
            },
            ...(tally === undefined
              ? {}
              : {
                  onStart: (s) => {
                    const from = s.started === 'snapshot' ? `from the snapshot at seq ${s.seq}` : `from seq ${s.seq}`;
                    stopSummaries = startSummaries(
                      (line) => stdout().write(`${line}\n`),
                      `following stream ${s.stream} at ${withoutCredentials(nats.servers.join(','))} into ${target}, ${from}; a summary every ${opts.summaryInterval} ms, Ctrl-C to stop`,
                      opts.summaryInterval,
                      () => tally.summary(opts.summaryInterval, where()),
                    );
                  },
                }),
            ...(defs === undefined || defs.length === 0 ? {} : { projections: defs }),
            ...(mirrorAll ? { mirrorAll } : {}),
            follow: opts.follow === true,
            signal: interrupt.signal,
            log: (line) => stderr().write(`${line}\n`),
          });
        } finally {
          stopSummaries?.();
          interrupt.release();
          await server?.close();
          await metrics?.close();
        }
        if (tally !== undefined) {
          const at = r.projections.filter((p) => p.state === 'active').map((p) => `${p.name} at seq ${p.seq}`);
          stdout().write(
            // Without a signal, a follower ends only where import stops: a suspended projection (exit 3 below).
            `${tally.final(interrupt.received() ?? 'a suspended projection', at.length > 0 ? `committed ${at.join(', ')}, where the next subscribe resumes` : where())}\n`,
          );
        }
        emit(opts, S.subscribeOutput, r, () =>
          [
            `read ${r.messages} messages of stream ${r.stream}: applied ${r.batchesApplied} batches, skipped ${r.batchesSkipped} already applied${r.rebuilt !== undefined ? `; rebuilt from the snapshot at seq ${r.rebuilt.snapshotSeq} (${r.rebuilt.reason})` : ''}`,
            ...r.projections.map(projectionLine),
          ].join('\n'),
        );
        exitFor(r.projections, 'run sluice subscribe again');
      },
    );
}
