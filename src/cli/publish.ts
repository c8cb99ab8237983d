import { InvalidArgumentError, type Command } from 'commander';
import { decodeCursor } from '../index.ts';
import type { NatsConnection, Publisher, PublishPass } from '../broker/index.ts';
import { addNatsOptions, natsConnectionOf, streamName, type NatsCliOptions } from './nats-options.ts';
import { parseWholeNumber } from './enable.ts';
import { followPublisher, readQuietly, withoutCredentials } from '../internal.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';
import { stderr, stdout } from './closed-pipe.ts';
import { summaryIntervalOption, startSummaries, StreamFollowTally } from './stream-follow-summary.ts';
import { parseMetricsAddress, serveMetrics, type MetricsAddress, type MetricsServer } from './metrics.ts';
import { PublishMetrics } from './broker-metrics.ts';
import { trapInterrupt } from './interrupt.ts';

function seqOf(cursor: string | undefined): number {
  return cursor === undefined ? 0 : decodeCursor(cursor).seq;
}

/** Where a publisher is: the seq the broker acknowledged last, and how far the source is ahead. */
function where(p: Publisher): string {
  const at = seqOf(p.cursor);
  return `at seq ${at}, source at seq ${Math.max(at, p.sourceSeq())} (lag ${Math.max(0, p.sourceSeq() - at)} events)`;
}

interface PublishCliOptions extends NatsCliOptions {
  stream?: string;
  batch?: number;
  format: ('jsonl' | 'segment')[];
  follow?: boolean;
  json?: boolean;
  metrics?: MetricsAddress;
  summaryInterval: number;
}

export function registerPublish(program: Command): void {
  const command = program
    .command('publish')
    .description(
      "Publish a source's changes to a NATS JetStream stream: a snapshot, then batches in the JSONL encoding (at-least-once; resumes after the broker's last ack).",
    )
    .argument('<db>', 'source SQLite database');
  addNatsOptions(command, { description: 'NATS server URL, e.g. nats://127.0.0.1:4222' })
    .option('--stream <name>', 'JetStream stream (default SLUICE_<source id>; made if missing)', streamName)
    .option(
      '--batch <n>',
      'seqs per batch window (fixed boundaries, so a batch published again has the same Nats-Msg-Id; default 1000, or 10000 when only segments are published)',
      parseWholeNumber,
    )
    .option(
      '--format <formats>',
      'formats to publish each batch in, comma-separated, each on its own subject: jsonl (for any system), segment (for sluice subscribers; docs/segment.md)',
      parseFormats,
      ['jsonl'],
    )
    .option('--follow', 'keep publishing as changes commit, until SIGINT/SIGTERM')
    .addOption(summaryIntervalOption('events published, the seq reached, the lag'))
    .option('--json', 'print one JSON summary object on exit')
    .option(
      '--metrics <host:port>',
      'with --follow, serve Prometheus metrics at http://HOST:PORT/metrics (docs/metrics.md)',
      parseMetricsAddress,
    )
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice publish app.db --nats nats://127.0.0.1:4222\n  $ sluice publish app.db --nats nats://127.0.0.1:4222 --follow   # resumes where the broker last acked\n  $ sluice publish app.db --nats nats://127.0.0.1:4222 --follow --metrics 127.0.0.1:9465\n  $ SLUICE_NATS_PASSWORD=... sluice publish app.db --nats tls://n1:4222,tls://n2:4222 --nats-user app --nats-tls-ca ca.pem',
    )
    // The source held while read, --follow included (readQuietly): a reader of a WAL file would leave a -wal and -shm beside it.
    .action((dbPath: string, opts: PublishCliOptions, command: Command) => {
      if (opts.metrics !== undefined && opts.follow !== true) command.error("error: option '--metrics <host:port>' needs --follow");
      const nats = natsConnectionOf(opts, command) as NatsConnection; // --nats is required
      return readQuietly([dbPath], () => publish(dbPath, opts, nats));
    });
}

/** sluice publish, its source held. */
async function publish(dbPath: string, opts: PublishCliOptions, nats: NatsConnection): Promise<void> {
  // The broker, and the NATS client with it, is loaded only by the commands that talk to NATS (docs/architecture.md, "Entries").
  const broker = await import('../broker/index.ts');
  // Trapped from the start: a signal during the first pass (a snapshot, an outage) ends it cleanly.
  const interrupt = trapInterrupt();
  const log = (line: string) => stderr().write(`${line}\n`);
  const totals = { batches: 0, events: 0, duplicates: 0, snapshots: [] as PublishPass['snapshots'][number][] };
  const add = (p: PublishPass) => {
    totals.batches += p.batches;
    totals.events += p.events;
    totals.duplicates += p.duplicates;
    totals.snapshots.push(...p.snapshots);
  };
  // Human mode of a follower: a start line, a summary every --summary-interval, a last line (as sync --follow).
  const tally = opts.follow === true && opts.json !== true ? new StreamFollowTally('published') : undefined;
  let publisher: Publisher | undefined;
  let metrics: PublishMetrics | undefined;
  let server: MetricsServer | undefined;
  let stopSummaries: (() => void) | undefined;
  try {
    publisher = await broker.Publisher.open(dbPath, nats, {
      ...(opts.stream === undefined ? {} : { stream: opts.stream }),
      ...(opts.batch === undefined ? {} : { batchSeqs: Math.max(1, opts.batch) }),
      formats: opts.format,
      log,
      signal: interrupt.signal,
      onAck: (a) => {
        metrics?.ack(a);
        tally?.batch(a.events);
      },
    });
    const p = publisher;
    // Served before the first pass publishes anything: a port that cannot be bound fails first.
    if (opts.metrics !== undefined) {
      metrics = new PublishMetrics(p.stream);
      server = await serveMetrics(metrics, opts.metrics);
    }
    if (tally !== undefined)
      stopSummaries = startSummaries(
        (line) => stdout().write(`${line}\n`),
        `following ${dbPath}: publishing to stream ${p.stream} at ${withoutCredentials(nats.servers.join(','))}, from seq ${seqOf(p.cursor)}; a summary every ${opts.summaryInterval} ms, Ctrl-C to stop`,
        opts.summaryInterval,
        () => tally.summary(opts.summaryInterval, where(p)),
      );
    if (opts.follow !== true) add(await p.runOnce());
    else await followPublisher(p, dbPath, { onPass: add, tally: totals, signal: interrupt.signal });
    if (tally !== undefined)
      stdout().write(
        `${tally.final(interrupt.received() ?? 'SIGINT', `${where(p)}; saved in ${p.stateFile}, where the next publish resumes`)}\n`,
      );
  } finally {
    stopSummaries?.();
    interrupt.release();
    await server?.close();
    await publisher?.close();
  }
  const cursor = publisher.cursor;
  const summary = {
    sourceId: publisher.sourceId,
    stream: publisher.stream,
    subject: publisher.subjects.batch,
    cursor: cursor ?? null,
    seq: cursor === undefined ? 0 : decodeCursor(cursor).seq,
    ...totals,
  };
  emit(
    opts,
    S.publishOutput,
    summary,
    () =>
      `published ${totals.events} events in ${totals.batches} batches${totals.duplicates > 0 ? ` (${totals.duplicates} the broker already had)` : ''}${totals.snapshots.length > 0 ? ` and ${totals.snapshots.length} snapshot(s)` : ''} to stream ${publisher?.stream}, up to seq ${summary.seq}`,
  );
}

/** `--format jsonl,segment`: the formats, each known, at least one. */
function parseFormats(value: string): ('jsonl' | 'segment')[] {
  const list = value.split(',').map((f) => f.trim());
  const bad = list.filter((f) => f !== 'jsonl' && f !== 'segment');
  if (list.length === 0 || bad.length > 0) throw new InvalidArgumentError(`expected jsonl, segment or jsonl,segment, got "${value}"`);
  return [...new Set(list)] as ('jsonl' | 'segment')[];
}
