import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { AckPolicy, DeliverPolicy, JetStreamApiError, type StoredMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { openDatabase, TEXT_ENCODINGS, type TextEncoding } from '../sqlite/index.ts';
import { FailClosedError, InvalidInputError } from '../errors.ts';
import { readProjections, type ProjectionRecord } from '../apply/target/index.ts';
import type { ReasonCode } from '../reasons.ts';
import { decodeCursor, type Cursor } from '../feed/index.ts';
import { historyRebuilds, neverBuilt, snapshotRebuilds, snapshotTables } from './subscribe-wants.ts';
import { parseDefinition, type ProjectionDefinitionInput } from '../projection/index.ts';
import { HEADER, headerCount, subjectsOf, type SourceSubjects } from './subjects.ts';
import { lastMessage, messageAtOrAfter, type Broker } from './nats.ts';
import type { Start } from './message-lines.ts';

/*
 * Where a subscriber starts, worked out from the target's cursor, not from
 * the broker (docs/broker.md): the first batch the stream holds that ends
 * after it; the published snapshot for a target with no projections (or a
 * --projection it does not have yet, or one whose first build failed), for
 * one the stream's batches no longer continue (SUBSCRIBER_BEHIND_STREAM),
 * for one whose cursor the stream's last snapshot, at or past it, does
 * not continue (a re-arm, a bump, a restore of the source: the cursor
 * check's reason), and for one past the last snapshot that the history
 * after it does not continue (the source restored from an older copy and
 * published again from the restored seq: SEQ_REGRESSED, HISTORY_DIVERGED;
 * streamContinues). And the target's own durable consumer, made again at
 * that start.
 */

export interface TargetPosition {
  /** The seq the target's active projections of this source have all reached (undefined: it needs a snapshot). */
  readonly seq: number | undefined;
  /**
   * The target holds projections of another source and none of this one: a
   * source whose capture was enabled again (a new source id). It is rebuilt
   * from this source's snapshot (SOURCE_CHANGED), as sync rebuilds a cursor
   * of another source.
   */
  readonly otherSource?: {
    readonly sourceId: string;
    readonly seq: number;
    /** Its projections of that source (how each is fed decides whether subscribe may move it: refuseOtherSource). */
    readonly records: readonly ProjectionRecord[];
    /** The source id the subscriber was given. */
    readonly given: string;
    /** The target's path (errors name it). */
    readonly target: string;
  };
  /** The target's projections of this source (their cursors, which a snapshot of the stream must continue). */
  readonly records?: readonly ProjectionRecord[];
}

/** Why a subscriber rebuilt its target from the stream's snapshot, and from where. */
export interface SubscriberRebuild {
  /**
   * SUBSCRIBER_BEHIND_STREAM: no batch of the stream continues the target;
   * SOURCE_CHANGED: the target followed another source; else why the
   * stream's last snapshot does not continue the target's cursor
   * (snapshotRebuilds: TABLE_REARMED, GENERATION_CHANGED, HISTORY_DIVERGED,
   * FILE_CHANGED, ...).
   */
  readonly reason: ReasonCode;
  readonly targetSeq: number;
  readonly snapshotSeq: number;
  /** With SOURCE_CHANGED: the source id the target followed. */
  readonly previousSourceId?: string;
}

export function targetPosition(
  targetPath: string,
  options: { readonly sourceId: string; readonly projections?: readonly ProjectionDefinitionInput[] },
): TargetPosition {
  if (!fs.existsSync(targetPath)) return { seq: undefined };
  const db = openDatabase(targetPath, { readonly: true, role: 'target' });
  try {
    const every = readProjections(db, 'main');
    const all = every.filter((p) => p.sourceId === options.sourceId);
    const other = every.filter((p) => p.sourceId !== options.sourceId);
    if (all.length === 0 && other.length > 0)
      return {
        seq: undefined,
        otherSource: {
          sourceId: (other[0] as (typeof other)[number]).sourceId,
          seq: Math.max(...other.map((p) => p.seq)),
          records: other,
          given: options.sourceId,
          target: targetPath,
        },
      };
    const wanted = (options.projections ?? []).map((d) => parseDefinition(d).name);
    if (all.length === 0 || wanted.some((w) => !all.some((p) => p.name === w))) return { seq: undefined };
    // One never built (its first build failed: a custom handler's init threw) is built from the snapshot, as sync builds it.
    if (all.some(neverBuilt)) return { seq: undefined };
    const active = all.filter((p) => p.state === 'active');
    // Suspended ones are skipped by the applier; with none active, nothing older than the newest matters.
    const seqs = (active.length > 0 ? active : all).map((p) => p.seq);
    return { seq: active.length > 0 ? Math.min(...seqs) : Math.max(...seqs), records: all };
  } finally {
    db.close();
  }
}

export interface Plan {
  readonly start: Start;
  /** The seq the target continues from: the snapshot's, or its own. */
  readonly seq: number;
  readonly encoding: TextEncoding | undefined;
  readonly rebuilt?: SubscriberRebuild;
  /** The cursor of the snapshot it starts from (its end's header): how far the stream is known to reach (ItemStream.lastCursor). */
  readonly cursor?: string;
  /**
   * The snapshot it starts from lies below the target's projections, and the
   * stream's history since does not continue them (the reason): the importer
   * installs it over them (ImportOptions.rebuildBelow), where their seq alone
   * would have it hold them.
   */
  readonly rebuildBelow?: ReasonCode;
}

export async function planStart(
  b: Broker,
  stream: string,
  subjects: SourceSubjects,
  position: TargetPosition,
  firstSeq: number,
  lastSeq: number,
  /**
   * The stream may be one made again that a publisher is still filling (after
   * a follower lost its consumer): where no batch continues the target and
   * the stream has no snapshot yet, BROKER_NO_SNAPSHOT (a follower waits for
   * it) rather than start at the end and meet a gap when the snapshot's
   * batches come.
   */
  remade = false,
  /**
   * Whether the target wants the snapshot whose end this is (it holds a
   * table the target needs: subscribe-wants.ts): the last one, when it lies
   * before where the target's batches start, is where it starts.
   */
  wanted: (end: StoredMsg) => boolean = () => false,
  /**
   * Whether the snapshot whose end this is rebuilds a projection the
   * subscriber redefines (subscribe-wants.ts redefined): the last one is
   * where it starts, also when it lies after the target's first batch,
   * which the new definition cannot apply.
   */
  redefines: (end: StoredMsg) => boolean = () => false,
): Promise<Plan> {
  const fromSnapshot = (known?: StoredMsg) => planFromSnapshot(b, stream, subjects, firstSeq, known);
  const end = await lastMessage(b, stream, subjects.end);
  const plan = await planFromCursor(b, stream, subjects, position, firstSeq, lastSeq, remade, end, fromSnapshot);
  if (plan.start.snapshot !== undefined) return plan;
  const start = Number(end?.header?.get(HEADER.snapshotStart));
  // Past it, its batches never bring what the target wants of it; before it, the reader meets it (SnapshotWanted).
  if (
    end !== undefined &&
    Number.isSafeInteger(start) &&
    start >= firstSeq &&
    (start < plan.start.streamSeq ? wanted(end) : redefines(end))
  )
    return fromSnapshot(end);
  return plan;
}

/** Starts from the snapshot whose end is `known` (else the stream's last one): BROKER_NO_SNAPSHOT if there is none, or retention dropped its first part. */
export async function planFromSnapshot(
  b: Broker,
  stream: string,
  subjects: SourceSubjects,
  firstSeq: number,
  known?: StoredMsg,
): Promise<Plan> {
  const end = known ?? (await lastMessage(b, stream, subjects.end));
  const start = Number(end?.header?.get(HEADER.snapshotStart));
  if (end === undefined || !Number.isSafeInteger(start) || start < firstSeq)
    throw new InvalidInputError(
      'BROKER_NO_SNAPSHOT',
      `Stream ${stream} holds no complete snapshot of the source, and the target needs one to start. Run sluice publish on the source: it publishes one when the stream has none, or its retention dropped it.`,
    );
  const cursor = end.header.get(HEADER.cursor);
  return {
    start: { streamSeq: start, snapshot: end.header.get(HEADER.snapshot), snapshotEnd: end.seq },
    seq: Number(end.header.get(HEADER.toSeq)),
    encoding: encodingOf(end),
    ...(cursor === '' ? {} : { cursor }),
  };
}

/**
 * Where a follower goes on after meeting, past the batches it applied, the
 * snapshot whose end is `end` lying below the target's seq (SnapshotWanted):
 * the source went back (an older copy restored, its publisher publishing a
 * snapshot at the restored seq, SEQ_REGRESSED, then the new history), unless
 * a batch after it ends at the target's seq with the target's event there.
 * Decided as a subscriber starting then decides with that snapshot as the
 * stream's last (planFromCursor: historyRebuilds, streamContinues): rebuilt
 * from it (rebuildBelow, with the reason), or on from the first batch after
 * it that ends past the target's seq; never from before it.
 */
export async function planPastSnapshot(
  b: Broker,
  stream: string,
  subjects: SourceSubjects,
  position: TargetPosition,
  firstSeq: number,
  lastSeq: number,
  end: StoredMsg,
): Promise<Plan> {
  const fromSnapshot = (known?: StoredMsg) => planFromSnapshot(b, stream, subjects, firstSeq, known);
  // Met past the seq the target had reached, it was published after the target got there: the source went back.
  return planFromCursor(b, stream, subjects, position, firstSeq, lastSeq, false, end, fromSnapshot, true);
}

/** Where the target's cursor says to start (planStart, before a wanted snapshot is considered); `end`: the stream's last snapshot's end. */
async function planFromCursor(
  b: Broker,
  stream: string,
  subjects: SourceSubjects,
  position: TargetPosition,
  firstSeq: number,
  lastSeq: number,
  remade: boolean,
  end: StoredMsg | undefined,
  fromSnapshot: (known?: StoredMsg) => Promise<Plan>,
  /** `end` was met by a follower past the seq the target had reached (planPastSnapshot): published after the target got there. */
  metPast = false,
): Promise<Plan> {
  if (position.otherSource !== undefined) {
    const was = position.otherSource;
    await refuseOtherSource(b, stream, was, end);
    const plan = await fromSnapshot();
    return { ...plan, rebuilt: { reason: 'SOURCE_CHANGED', targetSeq: was.seq, snapshotSeq: plan.seq, previousSourceId: was.sourceId } };
  }
  if (position.seq === undefined) return fromSnapshot();
  const target = position.seq;
  // The last snapshot, at or past the target, does not continue its cursors (the source re-armed, bumped, restored...):
  // neither do the batches after it, and those before it belong to the history the snapshot replaced.
  const snap = end === undefined ? undefined : snapshotTables(end.header.get(HEADER.toSeq), end.header.get(HEADER.cursor));
  const broken = snap === undefined ? undefined : snapshotRebuilds(position.records ?? [], snap.cursor);
  if (broken !== undefined) {
    const plan = await fromSnapshot(end);
    return { ...plan, rebuilt: { reason: broken, targetSeq: target, snapshotSeq: plan.seq } };
  }
  // The last snapshot lies below the target's seq: the target followed its history past it, or one it replaced (a restore).
  const after = end !== undefined && snap !== undefined && snap.seq < target ? end.seq + 1 : undefined;
  if (after !== undefined && end !== undefined && snap !== undefined) {
    const batchAt = async (seq: number) => cursorOf(await firstBatchAfter(b, stream, subjects.batch, seq - 1, after, lastSeq));
    // Only a stream that got to a projection's seq before its last snapshot shows that the source went back below it: one
    // fed from this stream alone got there through it; else the stream is merely behind one another feeder (sync, import)
    // brought further, and its snapshot, read before the source got there, says nothing of what follows it.
    const snapStart = Number(end.header.get(HEADER.snapshotStart));
    // The snapshot says how far the history it replaces had got (its publisher's position then): what the batches before
    // it showed, also once they are gone (purged by its publisher, a column left out of capture; dropped by retention).
    const replaces = headerCount(end.header, HEADER.replacesSeq);
    const reachedBefore = async (r: ProjectionRecord) =>
      metPast ||
      (r.sourcePath === null && r.fedBy?.via === 'subscribe' && r.fedBy.stream === stream) ||
      (Number.isSafeInteger(replaces) && replaces >= r.seq) ||
      (Number.isSafeInteger(snapStart) && (await streamReached(b, stream, subjects, r.seq, firstSeq, snapStart - 1)));
    const regressed = await historyRebuilds(position.records ?? [], snap, batchAt, reachedBefore);
    if (regressed !== undefined) {
      const plan = await fromSnapshot(end);
      return { ...plan, rebuilt: { reason: regressed, targetSeq: target, snapshotSeq: plan.seq }, rebuildBelow: regressed };
    }
  }
  const behind = async (known?: StoredMsg): Promise<Plan> => {
    const plan = await fromSnapshot(known);
    return { ...plan, rebuilt: { reason: 'SUBSCRIBER_BEHIND_STREAM', targetSeq: target, snapshotSeq: plan.seq } };
  };
  // Past the last snapshot, its history is the target's: its batches are after it (those before it may be of a history it replaced).
  const first = await firstBatchAfter(b, stream, subjects.batch, target, after ?? firstSeq, lastSeq);
  if (first === undefined) {
    // No batch ends after the target's seq, but the snapshot does: the events in between are in no batch of this
    // stream (one made again on a server that lost its store, or a publisher that started again from a new snapshot).
    if (end !== undefined && Number(end.header.get(HEADER.toSeq)) > target) return behind(end);
    if (end === undefined && remade)
      throw new InvalidInputError(
        'BROKER_NO_SNAPSHOT',
        `Stream ${stream} holds no batch that continues the target's seq ${target}, and no snapshot yet. Run sluice publish on the source: it publishes one into a stream that has none.`,
      );
    return { start: { streamSeq: lastSeq + 1 }, seq: target, encoding: undefined };
  }
  if (Number(first.header.get(HEADER.fromSeq)) > target) return behind();
  // A batch that spans a projection's seq would be applied past it over rows its events up to that seq are taken to
  // have made, and it does not carry what proves it (the journal's event there, which the cursor anchors): the source
  // may have been restored and written again since (one batch across the restored seq). Rebuilt from the snapshot.
  if (end !== undefined) {
    for (const r of position.records ?? []) {
      if (r.cursor === null || r.state === 'suspended') continue;
      const m = r.seq === target ? first : await firstBatchAfter(b, stream, subjects.batch, r.seq, after ?? firstSeq, lastSeq);
      if (m === undefined || Number(m.header.get(HEADER.fromSeq)) >= r.seq) continue;
      const plan = await fromSnapshot(end);
      return {
        ...plan,
        rebuilt: { reason: 'HISTORY_DIVERGED', targetSeq: r.seq, snapshotSeq: plan.seq },
        rebuildBelow: 'HISTORY_DIVERGED',
      };
    }
  }
  return { start: { streamSeq: first.seq }, seq: target, encoding: encodingOf(first) };
}

/**
 * Refuses (SOURCE_CHANGED) to move a target whose projections follow source
 * `was.sourceId` onto this stream's source, unless the move is the one a
 * subscriber makes when its source's capture was enabled again (a new id):
 * every one of them was fed by subscribe from a stream (a sync's source file,
 * or an import's, is the truth of what they hold, and its id may be the newer
 * one: the id given may be a stale one of it), and this stream's last
 * snapshot was published after the last message of the other source on the
 * stream they were fed from (where this broker holds it): a target never
 * goes back onto a stream its source left.
 */
async function refuseOtherSource(
  b: Broker,
  stream: string,
  was: NonNullable<TargetPosition['otherSource']>,
  end: StoredMsg | undefined,
): Promise<void> {
  const names = (rs: readonly ProjectionRecord[]) =>
    `Target ${was.target}: projection${rs.length === 1 ? '' : 's'} ${rs.map((r) => r.name).join(', ')} follow${rs.length === 1 ? 's' : ''}`;
  const fix = `Subscribe it with the id it follows (--source ${was.sourceId}; sluice status SOURCE shows a source's id), sync it from its source, or subscribe source ${was.given} into a new target. Nothing was written.`;
  const notSubscribed = was.records.filter((r) => r.sourcePath !== null || r.fedBy?.via !== 'subscribe');
  if (notSubscribed.length > 0) {
    const how = notSubscribed.map((r) =>
      r.sourcePath !== null
        ? `synced from ${r.sourcePath}`
        : r.fedBy?.via === 'import'
          ? `imported from ${r.fedBy.file}`
          : 'fed by no recorded subscriber',
    );
    throw new FailClosedError(
      'SOURCE_CHANGED',
      `${names(notSubscribed)} source ${was.sourceId} (${[...new Set(how)].join('; ')}), not source ${was.given} of stream ${stream}. Subscribe moves a target onto another source id only off a stream it was fed from (a source whose capture was enabled again, told its new id); a target sync or import feeds follows the file it is fed from, whose id source ${was.given} may be an older one of. ${fix}`,
      { sourceId: was.given, previousSourceId: was.sourceId },
    );
  }
  if (end === undefined) return; // no snapshot to move onto: planFromSnapshot says so
  const fedFrom = new Set(was.records.flatMap((r) => (r.fedBy?.via === 'subscribe' && r.fedBy.url === b.url ? [r.fedBy.stream] : [])));
  const other = subjectsOf(was.sourceId, 'jsonl');
  for (const s of fedFrom) {
    for (const subject of [other.end, other.batch, subjectsOf(was.sourceId, 'segment').batch]) {
      const last = await lastMessageIfAny(b, s, subject);
      if (last === undefined || last.time.getTime() <= end.time.getTime()) continue;
      throw new FailClosedError(
        'SOURCE_CHANGED',
        `${names(was.records)} source ${was.sourceId}, fed from stream ${s}, which got a message of it (at ${last.time.toISOString()}) after the last snapshot of source ${was.given} in stream ${stream} was published (at ${end.time.toISOString()}): source ${was.given} is not a newer id of the target's source (a stale --source, or sluice.yml source:, of a source whose capture was enabled again since), and subscribe does not move a target back onto a stream its source left. ${fix}`,
        { sourceId: was.given, previousSourceId: was.sourceId },
      );
    }
  }
}

/** lastMessage, or undefined where the stream is gone. */
async function lastMessageIfAny(b: Broker, stream: string, subject: string): Promise<StoredMsg | undefined> {
  try {
    return await lastMessage(b, stream, subject);
  } catch (err) {
    if (err instanceof JetStreamApiError) return undefined;
    throw err;
  }
}

/**
 * The stream sequence of the source's last message on the stream (on any of
 * its subjects, every format's; 0: none), where a one-shot subscribe stops
 * reading: its consumer gets its source's subjects only, and a stream may be
 * shared with other sources (--stream), whose message may be its last.
 */
export async function sourceLastSeq(b: Broker, stream: string, sourceId: string): Promise<number> {
  const names = new Set(
    (['jsonl', 'segment'] as const).flatMap((f) => {
      const s = subjectsOf(sourceId, f);
      return [s.batch, s.part, s.end];
    }),
  );
  const lasts = await Promise.all([...names].map((subject) => lastMessage(b, stream, subject)));
  return Math.max(0, ...lasts.map((m) => m?.seq ?? 0));
}

/** Whether a batch or a snapshot the stream holds between stream sequences `lo` and `hi` ends at or past `seq`. */
async function streamReached(b: Broker, stream: string, subjects: SourceSubjects, seq: number, lo: number, hi: number): Promise<boolean> {
  if (lo > hi) return false;
  for (const subject of [subjects.batch, subjects.end])
    if ((await firstBatchAfter(b, stream, subject, seq - 1, lo, hi)) !== undefined) return true;
  return false;
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

/** A batch message's cursor (undefined: none, or one that does not decode, which the reader refuses when it gets there). */
function cursorOf(m: StoredMsg | undefined): Cursor | undefined {
  const token = m?.header?.get(HEADER.cursor);
  if (token === undefined || token === '') return undefined;
  try {
    return decodeCursor(token);
  } catch {
    return undefined;
  }
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
export async function freshConsumer(b: Broker, stream: string, targetPath: string, subjects: SourceSubjects, startSeq: number) {
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
