import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { AckPolicy, DeliverPolicy, JetStreamApiError, type StoredMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { openDatabase } from '../sqlite/connection.ts';
import { InvalidInputError } from '../errors.ts';
import { readProjections } from '../apply/target-meta.ts';
import { parseDefinition, type ProjectionDefinitionInput } from '../projection/definition.ts';
import { importStream, type ImportOptions, type ImportReport } from '../export/import.ts';
import { TEXT_ENCODINGS, type TextEncoding } from '../sqlite/text-encoding.ts';
import { defaultStreamName, HEADER, subjectsOf, type SourceSubjects } from './subjects.ts';
import { lastMessage, messageAtOrAfter, openBroker, requireStream, type Broker, type Log } from './nats.ts';
import { messageLines, type Start } from './message-lines.ts';

/*
 * Applies a source's stream to a target (docs/broker.md), through import's
 * applier (importStream): the same checks as sync and import (validated
 * cursor, before-images, suspension), and the target's cursor is the truth.
 * Where to start is worked out from that cursor, not from the broker: the
 * first batch the stream holds that ends after it. A target with no
 * projections (or a --projection it does not have yet) starts from the
 * published snapshot; so does one whose cursor is older than the first batch
 * the stream still holds (SUBSCRIBER_BEHIND_STREAM). Messages come through a
 * durable consumer of the target's own, acknowledged once what they carry is
 * committed; a batch delivered twice is dropped by the cursor rules.
 */

export interface SubscribeOptions {
  /** The source id whose stream to apply. */
  readonly sourceId: string;
  /** Stream name (default SLUICE_<source id>). */
  readonly stream?: string;
  /** Definitions (default: the target's stored ones, else a mirror of every table of the snapshot). */
  readonly projections?: readonly ProjectionDefinitionInput[];
  /** Keep applying new batches until `signal` aborts. */
  readonly follow?: boolean;
  readonly signal?: AbortSignal;
  readonly log?: Log;
  readonly onProgress?: ImportOptions['onProgress'];
  /** After each batch or snapshot the applier took (for metrics): whether it committed it or skipped it as already applied. */
  readonly onBatch?: (b: SubscribedBatch) => void;
}

export interface SubscribedBatch {
  readonly applied: boolean;
  readonly snapshot: boolean;
  /** Event lines the batch carried. */
  readonly events: number;
  /** When the broker stored its message (ms since the epoch). */
  readonly storedMs: number;
}

export interface SubscribeReport extends ImportReport {
  readonly stream: string;
  /** Where it started: the published snapshot, a batch, or the stream's end (nothing new). */
  readonly started: 'snapshot' | 'batch' | 'end';
  /** Why it rebuilt from the snapshot, when its cursor was behind the stream. */
  readonly rebuilt?: { readonly reason: 'SUBSCRIBER_BEHIND_STREAM'; readonly targetSeq: number; readonly snapshotSeq: number };
  /** Messages read from the stream. */
  readonly messages: number;
}

export async function subscribe(targetPath: string, url: string, options: SubscribeOptions): Promise<SubscribeReport> {
  const log = options.log ?? (() => {});
  const stream = options.stream ?? defaultStreamName(options.sourceId);
  const subjects = subjectsOf(options.sourceId);
  const broker = await openBroker(url, 'subscribe', log);
  try {
    const info = await requireStream(broker, stream, options.sourceId);
    const position = targetPosition(targetPath, options);
    const plan = await planStart(broker, stream, subjects, position, info.state.first_seq, info.state.last_seq);
    if (plan.rebuilt !== undefined)
      log(
        `sluice subscribe: SUBSCRIBER_BEHIND_STREAM: target ${targetPath} is at seq ${plan.rebuilt.targetSeq}, older than the first batch stream ${stream} still holds: rebuilding from the snapshot at seq ${plan.rebuilt.snapshotSeq}`,
      );
    const consumer = await freshConsumer(broker, stream, targetPath, subjects, plan.start.streamSeq);
    const source = messageLines(broker, consumer, {
      subjects,
      start: plan.start,
      endSeq: options.follow === true ? undefined : info.state.last_seq,
      signal: options.signal,
      label: `${url} stream ${stream}`,
    });
    let report: ImportReport;
    let applied = 0;
    const onProgress: ImportOptions['onProgress'] = (p) => {
      options.onProgress?.(p);
      const last = source.last();
      // A snapshot is committed whenever it is reported (batchesApplied counts batches only).
      if (options.onBatch !== undefined && last !== undefined)
        options.onBatch({ ...last, applied: last.snapshot || p.batchesApplied > applied });
      applied = p.batchesApplied;
    };
    try {
      report = await importStream(
        targetPath,
        {
          label: `${url} stream ${stream}`,
          ...(plan.encoding === undefined ? {} : { encoding: plan.encoding }),
          read: (o) => source.read(options.sourceId, o),
        },
        {
          ...(options.projections === undefined ? {} : { projections: options.projections }),
          ...(options.onProgress === undefined && options.onBatch === undefined ? {} : { onProgress }),
        },
      );
    } finally {
      source.close();
    }
    return {
      ...report,
      stream,
      started: plan.start.snapshot !== undefined ? 'snapshot' : plan.start.streamSeq > info.state.last_seq ? 'end' : 'batch',
      ...(plan.rebuilt === undefined ? {} : { rebuilt: plan.rebuilt }),
      messages: source.messages(),
    };
  } finally {
    await broker.close();
  }
}

interface TargetPosition {
  /** The seq the target's active projections of this source have all reached (undefined: it needs a snapshot). */
  readonly seq: number | undefined;
}

function targetPosition(targetPath: string, options: SubscribeOptions): TargetPosition {
  if (!fs.existsSync(targetPath)) return { seq: undefined };
  const db = openDatabase(targetPath, { readonly: true, role: 'target' });
  try {
    const all = readProjections(db, 'main').filter((p) => p.sourceId === options.sourceId);
    const wanted = (options.projections ?? []).map((d) => parseDefinition(d).name);
    if (all.length === 0 || wanted.some((w) => !all.some((p) => p.name === w))) return { seq: undefined };
    const active = all.filter((p) => p.state === 'active');
    // Suspended ones are skipped by the applier; with none active, nothing older than the newest matters.
    const seqs = (active.length > 0 ? active : all).map((p) => p.seq);
    return { seq: active.length > 0 ? Math.min(...seqs) : Math.max(...seqs) };
  } finally {
    db.close();
  }
}

interface Plan {
  readonly start: Start;
  readonly encoding: TextEncoding | undefined;
  readonly rebuilt?: { readonly reason: 'SUBSCRIBER_BEHIND_STREAM'; readonly targetSeq: number; readonly snapshotSeq: number };
}

async function planStart(
  b: Broker,
  stream: string,
  subjects: SourceSubjects,
  position: TargetPosition,
  firstSeq: number,
  lastSeq: number,
): Promise<Plan> {
  const fromSnapshot = async (): Promise<Plan> => {
    const end = await lastMessage(b, stream, subjects.end);
    const start = Number(end?.header?.get(HEADER.snapshotStart));
    if (end === undefined || !Number.isSafeInteger(start) || start < firstSeq)
      throw new InvalidInputError(
        'BROKER_NO_SNAPSHOT',
        `Stream ${stream} holds no complete snapshot of the source, and the target needs one to start. Run sluice publish on the source: it publishes one when the stream has none, or its retention dropped it.`,
      );
    return { start: { streamSeq: start, snapshot: end.header.get(HEADER.snapshot) }, encoding: encodingOf(end) };
  };
  if (position.seq === undefined) return fromSnapshot();
  const target = position.seq;
  const first = await firstBatchAfter(b, stream, subjects.batch, target, firstSeq, lastSeq);
  if (first === undefined) return { start: { streamSeq: lastSeq + 1 }, encoding: undefined };
  const from = Number(first.header.get(HEADER.fromSeq));
  if (from > target) {
    const plan = await fromSnapshot();
    const snapshotSeq = Number((await lastMessage(b, stream, subjects.end))?.header.get(HEADER.toSeq));
    return { ...plan, rebuilt: { reason: 'SUBSCRIBER_BEHIND_STREAM', targetSeq: target, snapshotSeq } };
  }
  return { start: { streamSeq: first.seq }, encoding: encodingOf(first) };
}

/** The first batch message in stream order that ends after `seq` (batches are in seq order: binary search). */
export async function firstBatchAfter(
  b: Broker,
  stream: string,
  subject: string,
  seq: number,
  lo: number,
  hi: number,
): Promise<StoredMsg | undefined> {
  let found: StoredMsg | undefined;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    const m = await messageAtOrAfter(b, stream, mid, subject);
    if (m === undefined || m.seq > hi) {
      hi = mid - 1;
      continue;
    }
    if (Number(m.header.get(HEADER.toSeq)) > seq) {
      found = m;
      hi = mid - 1;
    } else lo = m.seq + 1;
  }
  return found;
}

/** The text encoding the message's marker line declares. */
function encodingOf(m: StoredMsg): TextEncoding | undefined {
  const text = Buffer.from(m.data).toString('utf8').trimEnd();
  const last = text.slice(text.lastIndexOf('\n') + 1);
  try {
    const e = (JSON.parse(last) as { encoding?: unknown }).encoding;
    return (TEXT_ENCODINGS as readonly unknown[]).includes(e) ? (e as TextEncoding) : undefined;
  } catch {
    return undefined; // the reader refuses the line
  }
}

/** The target's own durable consumer, made again at `startSeq` (the target's cursor decides where, not the broker). */
async function freshConsumer(b: Broker, stream: string, targetPath: string, subjects: SourceSubjects, startSeq: number) {
  const name = `sluice_${createHash('sha256').update(path.resolve(targetPath)).digest('hex').slice(0, 20)}`;
  try {
    await b.jsm.consumers.delete(stream, name);
  } catch (err) {
    if (!(err instanceof JetStreamApiError)) throw err;
  }
  await b.jsm.consumers.add(stream, {
    durable_name: name,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: Math.max(1, startSeq),
    filter_subject: subjects.all,
    ack_wait: nanos(10 * 60_000),
    max_ack_pending: 10_000,
  });
  return b.js.consumers.get(stream, name);
}
