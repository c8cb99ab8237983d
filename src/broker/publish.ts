import path from 'node:path';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { PubAck } from '@nats-io/jetstream';
import type { Db } from '../sqlite/index.ts';
import { foldIdent, textEncoding } from '../sqlite/index.ts';
import { openSource, readState, readTables, unreadableCapture } from '../capture/index.ts';
import { decodeCursor, lastJournalSeq, validateCursor } from '../feed/index.ts';
import { FailClosedError } from '../errors.ts';
import { writeBatch, type LineWriter } from '../export/index.ts';
import { batchMsgId, defaultStreamName, HEADER, subjectsOf, type BatchFormat, type SourceSubjects } from './subjects.ts';
import { segmentMessage } from './segment-message.ts';
import { publishSnapshot, SNAPSHOT_WHY, tooLarge } from './publish-snapshot.ts';
import { aliasFields } from '../reasons.ts';
import { readStateFile, StateFileWriter } from './publish-state-file.ts';
import type { NatsTarget } from './connection/index.ts';
import {
  ensureStream,
  isWrongLastSequence,
  lastMessage,
  messageAtOrAfter,
  openBroker,
  streamInfo,
  untilAnswered,
  type Broker,
  type Log,
} from './nats.ts';
import {
  boundByStream,
  checkNoPerSubjectLimit,
  checkSnapshotFits,
  isOverMaxMsgSize,
  isStreamFull,
  lineBudget,
  overMaxMsgSize,
  snapshotDropped,
  streamFull,
  tooLargeForStream,
} from './stream-limits.ts';

/*
 * Publishes a source's changes to a JetStream stream (docs/broker.md).
 *
 * A batch is one message: its event lines and its batch marker (count and
 * digest), exactly as an export file holds them. Batch boundaries are fixed
 * seq windows, (k*N, (k+1)*N], cut at the source's high-water mark and
 * cut shorter (in proportion to its size) while a message would be over the
 * server's max_payload or the stream's max_msg_size (stream-limits.ts), so
 * a batch published again covers the same range and gets the same
 * Nats-Msg-Id (its range and the history it belongs to: the same range of
 * a source restored from an older copy and written again is another
 * message, with another id: subjects.ts batchMsgId).
 *
 * The position is saved only after the broker has acknowledged the message,
 * in a small state file next to the source (`<db>.publish-<stream>.cursor`),
 * written behind the publishing (publish-state-file.ts: it may lag, never lead).
 * Not in the source's _sluice_consumers acknowledgement row: that row is
 * informational, written at most once a second and lagging by design, and
 * writing it needs the source's write lock, while publish, like export,
 * only reads the source. At start the publisher also reads the stream's last
 * batch and snapshot: whichever of those and the state file is furthest is
 * where it resumes, so a crash between the broker's ack and the state file
 * re-publishes nothing. A stream that lost its tail (its store restored
 * from an older copy) is continued from its own last batch or snapshot, not
 * from the state file further on: the lost range is published again, so the
 * stream's batches stay contiguous. So is one that loses its tail under a
 * running publisher: the first message of each pass expects the stream
 * sequence of the last message the publisher had acknowledged on its
 * subject (Nats-Expected-Last-Subject-Sequence); the broker refuses it on a
 * stream that no longer holds that message, and the publisher reads again
 * where the stream reaches, as at start (#reposition).
 *
 * A snapshot (table and row lines in parts, then its marker with the
 * high-water mark) is published when the stream has none, and again when the
 * stream's retention no longer reaches back to the first part of the last one.
 */

export interface PublishOptions {
  /** Stream name (default SLUICE_<source id>). */
  readonly stream?: string;
  /** The formats each batch is published in, each on its own subject (subjects.ts). Default: JSONL only. */
  readonly formats?: readonly BatchFormat[];
  /** Seqs per batch window. Default defaultBatchSeqs(formats): 1000, or 10,000 when only segments are published. */
  readonly batchSeqs?: number;
  readonly log?: Log;
  /** Stops waiting for the broker (an outage) and publishing more. */
  readonly signal?: AbortSignal;
  /** After each batch the broker acknowledged (for metrics): its events, and whether the broker already had it. */
  readonly onAck?: (ack: { readonly events: number; readonly duplicate: boolean }) => void;
}

export interface PublishPass {
  readonly batches: number;
  readonly events: number;
  /** Batches the broker already had (same Nats-Msg-Id within its dedup window). */
  readonly duplicates: number;
  readonly snapshots: readonly PublishedSnapshotReport[];
}

export interface PublishedSnapshotReport {
  readonly seq: number;
  readonly rows: number;
  /** Why it was published: STREAM_HAD_NO_SNAPSHOT, SNAPSHOT_PAST_RETENTION, or why the position could not be continued. */
  readonly reason: string;
  /** The reason's retired names, for one release (STREAM_HAD_NO_SNAPSHOT was NO_SNAPSHOT_PUBLISHED; src/reasons.ts `replaces`). */
  readonly aliases?: readonly string[];
}

/**
 * Seqs per batch window when none is given. A backlog (a burst, a catch-up)
 * goes out in windows of this many seqs. A subscriber applies each segment
 * message in a transaction of its own, after attaching and checking it, and
 * the publisher writes each one as a small database, so a segment's cost
 * per message is far above a JSONL line's: with only segments published,
 * windows of 10,000 took a third less CPU over all the stages of a 4-way
 * fan-out than windows of 1,000 (bench/fan-out.ts --format segment). A JSONL
 * message of 10,000 events is over the 1 MB max_payload and would be built
 * twice (the window cut to fit), so JSONL keeps 1,000. (A segment of wide
 * rows may be over it too, and is cut the same way.) At a steady rate a
 * message holds what committed since the last pass whatever this is.
 */
function defaultBatchSeqs(formats: readonly BatchFormat[]): number {
  return formats.includes('jsonl') ? 1000 : 10_000;
}
/** Batches waiting for the broker's ack at once (#nextBatches). */
const PIPELINE = 4;

/** A batch window ready to publish. */
/** What a window's message says of it. */
interface WindowBatch {
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly cursor: string;
  readonly events: number;
}

/** One batch window, in each format the publisher writes. */
interface Prepared {
  readonly batch: WindowBatch;
  /** It ends before its window does: it reached the source's high-water mark when it was read. */
  readonly atEnd: boolean;
  readonly messages: readonly {
    readonly subject: string;
    readonly data: Buffer;
    readonly msgID: string;
    /** Its headers, new for each publish (the client adds the expectations to the object it is given). */
    readonly headers: () => ReturnType<typeof natsHeaders>;
  }[];
}

export class Publisher {
  readonly db: Db;
  readonly sourcePath: string;
  readonly sourceId: string;
  readonly stream: string;
  readonly subjects: SourceSubjects;
  /** The formats batches are published in (at least one). */
  readonly formats: readonly BatchFormat[];
  readonly stateFile: string;
  readonly #saved: StateFileWriter;
  readonly #broker: Broker;
  readonly #options: PublishOptions;
  readonly #log: Log;
  /** The cursor of the last batch (or snapshot) the broker acknowledged. */
  #cursor: string | undefined;
  /**
   * By batch subject: the stream sequence of the last message on it, as this
   * publisher last knew it (the one the broker acknowledged last, or the
   * stream's last at start; 0: none). The first message of a pass expects it.
   */
  readonly #subjectSeqs = new Map<string, number>();
  #lastSnapshotCheck = 0;
  /** The stream sequence of the last snapshot's end after which every format's batches were found to continue it (#formatAfterSnapshot). */
  #formatsCheckedAt: number | undefined;
  /** Streams made again by #remakeStream (a snapshot whose parts straddle one is published again). */
  #streamsMade = 0;
  /** The stream's max_msg_size as last read (at open, each snapshot check, a message refused over it); 0 or less: none. */
  #maxMsgSize = -1;

  private constructor(db: Db, sourcePath: string, sourceId: string, broker: Broker, options: PublishOptions) {
    this.db = db;
    this.sourcePath = sourcePath;
    this.sourceId = sourceId;
    this.stream = options.stream ?? defaultStreamName(sourceId);
    this.subjects = subjectsOf(sourceId);
    this.formats = options.formats === undefined || options.formats.length === 0 ? ['jsonl'] : [...new Set(options.formats)];
    this.stateFile = `${path.resolve(sourcePath)}.publish-${this.stream}.cursor`;
    this.#saved = new StateFileWriter(this.stateFile);
    this.#broker = broker;
    this.#options = options;
    this.#log = options.log ?? (() => {});
  }

  /**
   * Opens the source (read only) and the broker (a URL, a comma list of
   * them, or a NatsConnection with its login and TLS), makes the stream if
   * missing, and finds where to resume.
   */
  static async open(sourcePath: string, url: NatsTarget, options: PublishOptions = {}): Promise<Publisher> {
    const db = openSource(sourcePath, { readonly: true });
    let broker: Broker | undefined;
    try {
      const state = readState(db);
      // Every reader's error for a source with no capture (a sync target given instead: TARGET_NOT_SOURCE).
      if (state === undefined) throw unreadableCapture(db, 'CAPTURE_ABSENT');
      broker = await openBroker(url, 'publish', options.log);
      const p = new Publisher(db, sourcePath, state.sourceId, broker, options);
      const { config } = await ensureStream(broker, p.stream, p.sourceId, options.log);
      checkNoPerSubjectLimit(p.stream, config);
      p.#maxMsgSize = config.max_msg_size ?? -1;
      await p.#resume();
      return p;
    } catch (err) {
      await broker?.close();
      db.close();
      throw err;
    }
  }

  /** The cursor of the last acknowledged batch or snapshot (undefined: nothing published yet). */
  get cursor(): string | undefined {
    return this.#cursor;
  }

  /** Waits until the state file holds the last acknowledged position. */
  async flush(): Promise<void> {
    await this.#saved.flush();
  }

  async close(): Promise<void> {
    try {
      await this.#saved.flush();
    } finally {
      await this.#broker.close();
      this.db.close();
    }
  }

  async #resume(): Promise<void> {
    const candidates: string[] = [];
    const saved = readStateFile(this.stateFile);
    if (saved !== undefined) candidates.push(saved);
    const { end, least } = await this.#streamHolds();
    if (end !== undefined) candidates.push(end);
    if (least !== undefined) candidates.push(least);
    // Where the stream's own batches and snapshot reach. When the state file is further, the stream lost its tail (its
    // store restored from an older copy, a server rolled back): going on from the state file would leave a hole after
    // the stream's last batch, where every subscriber that starts from its snapshot stops (BATCH_GAP). Go on from what
    // the stream holds: the lost range is published again (or, if the journal no longer has it, a new snapshot).
    // A stream that holds nothing of the source (made again empty) has no snapshot for a hole to follow: the state
    // file is where its subscribers' cursors are, and the snapshot check publishes a snapshot into it.
    const held = furthest([end, least]);
    // A state file of a history the source no longer has (restored from an older copy) is no position: the stream's is.
    if (saved !== undefined && held !== undefined && !this.#continues(saved) && this.#continues(held)) {
      this.#cursor = held;
      this.#saved.save(held);
      return;
    }
    if (saved !== undefined && held !== undefined && seqOf(saved) > seqOf(held)) {
      this.#log(
        `sluice publish: stream ${this.stream} reaches only seq ${seqOf(held)}, but ${this.stateFile} says seq ${seqOf(saved)} was published: the stream lost its last messages (its store restored from an older copy?); publishing again from there`,
      );
      this.#cursor = held;
      this.#saved.save(held);
      return;
    }
    this.#cursor = furthest(candidates);
    // The state file says where this publisher goes on from, also when the stream is further (a publisher killed before
    // its last acknowledgements reached the file): a run that then finds nothing more to publish leaves it right.
    if (this.#cursor !== undefined && this.#cursor !== saved) this.#saved.save(this.#cursor);
  }

  /**
   * What the stream holds of this source: the cursor of its last snapshot,
   * and of its last batch in the format whose last batch is least far (so a
   * format whose message a crash cut off gets that window again). Notes the
   * stream sequence of the last message on each batch subject (#subjectSeqs).
   *
   * A format's last batch that lies before the last snapshot in the stream
   * and does not continue the source, where that snapshot does, is of a
   * history the snapshot replaced (the source restored from an older copy,
   * its publisher's SEQ_REGRESSED snapshot, no batch of the new history
   * yet): that format goes on from the snapshot. Going on from the old
   * history's batch, further on, found it could not be continued and
   * published a whole new snapshot, run after run, until the new history
   * passed the old one's high-water mark.
   */
  async #streamHolds(): Promise<{ readonly end: string | undefined; readonly least: string | undefined }> {
    const cursorOf = (m: Awaited<ReturnType<typeof lastMessage>>) => {
      const c = m?.header?.get(HEADER.cursor);
      return m !== undefined && m.header?.get(HEADER.source) === this.sourceId && c !== undefined && c !== '' ? c : undefined;
    };
    const endMessage = await lastMessage(this.#broker, this.stream, this.subjects.end);
    const end = cursorOf(endMessage);
    const batches: string[] = [];
    for (const f of this.formats) {
      const subject = subjectsOf(this.sourceId, f).batch;
      const m = await lastMessage(this.#broker, this.stream, subject);
      this.#subjectSeqs.set(subject, m?.seq ?? 0);
      const c = cursorOf(m);
      if (c === undefined) continue;
      const replaced = end !== undefined && (m?.seq ?? 0) < (endMessage?.seq ?? 0) && !this.#continues(c) && this.#continues(end);
      batches.push(replaced ? end : c);
    }
    return { end, least: batches.sort((a, b) => seqOf(a) - seqOf(b))[0] };
  }

  /** Whether the source continues `cursor` (its history: not restored below it, re-armed, bumped...), as a batch read from it checks. */
  #continues(cursor: string): boolean {
    try {
      return validateCursor(this.db, cursor).status === 'ok';
    } catch {
      return false;
    }
  }

  /**
   * The broker refused the first message of a pass (or one sent again
   * alone): the stream's last message on its subject is not the last one
   * this publisher had acknowledged there. Reads again what the stream
   * holds, as at start (#resume). A stream that reaches less far than the
   * position lost its last messages (its store restored from an older copy
   * under the running publisher): it is continued from what it holds, the
   * lost range published again, and a line says so; going on from the
   * position would leave a hole where every subscriber that starts from its
   * snapshot stops (BATCH_GAP). One that reaches as far or further (another
   * publisher of the source on the stream, retention that dropped the last
   * batch, a stream made again empty) is continued from the further.
   * False if stopped first.
   */
  async #reposition(refused: unknown): Promise<boolean> {
    const holds = await this.#retry(() => this.#streamHolds());
    if (holds === undefined) return false;
    const held = furthest([holds.end, holds.least]);
    const at = this.#cursor;
    if (held === undefined) return true;
    if (at !== undefined && seqOf(held) < seqOf(at))
      this.#log(
        `sluice publish: stream ${this.stream} reaches only seq ${seqOf(held)}, but this publisher had published through seq ${seqOf(at)} (the broker refused the next batch: ${(refused as Error).message}): the stream lost its last messages (its store restored from an older copy?); publishing again from there`,
      );
    else if (at !== undefined && seqOf(held) === seqOf(at)) return true;
    this.#cursor = held;
    return true;
  }

  /** The source's high-water seq (what a follower's lag is counted against). */
  sourceSeq(): number {
    return lastJournalSeq(this.db);
  }

  /**
   * Publishes everything the source has after the position, and a snapshot
   * where one is needed: checked after the pass, or, with
   * `snapshotCheckMs`, if the last check is older than that (a follower's
   * passes come with every commit: two broker requests each, in the path of
   * the next batch).
   */
  async runOnce(options: { readonly snapshotCheckMs?: number } = {}): Promise<PublishPass> {
    const tally = { batches: 0, events: 0, duplicates: 0, snapshots: [] as PublishedSnapshotReport[] };
    if (this.#cursor === undefined) await this.#snapshot('STREAM_HAD_NO_SNAPSHOT', tally);
    while (this.#cursor !== undefined && !this.#stopped()) {
      let more: boolean;
      try {
        more = await this.#nextBatches(this.#cursor, tally);
      } catch (err) {
        // The stream's max_msg_size was lowered: the windows after the position are cut again to it.
        if (err instanceof LimitLowered) continue;
        // The position no longer continues (pruned past, a restored or re-made source...): start again from a snapshot.
        if (!(err instanceof FailClosedError)) throw err;
        this.#log(
          `sluice publish: ${err.code}: the position at seq ${decodeCursor(this.#cursor).seq} cannot be continued; publishing a new snapshot`,
        );
        await this.#snapshot(err.code, tally);
        continue;
      }
      if (!more) break;
    }
    // A table enabled since the position was taken, which its batches would never carry: after the batches of the
    // tables it covers (so their subscribers go on from their cursors), a snapshot that holds it starts a new position.
    if (this.#cursor !== undefined && !this.#stopped() && addedTables(this.db, this.#cursor))
      await this.#snapshot('STREAM_TABLES_ADDED', tally);
    await this.checkSnapshot(tally, options.snapshotCheckMs ?? 0);
    return tally;
  }

  /**
   * Publishes a new snapshot if the stream has none, or its retention no
   * longer reaches back to the last one's first part. Also from an idle
   * follower, at most every `minIntervalMs`.
   */
  async checkSnapshot(tally?: { snapshots: PublishedSnapshotReport[] }, minIntervalMs = 0): Promise<void> {
    if (this.#stopped() || Date.now() - this.#lastSnapshotCheck < minIntervalMs) return;
    this.#lastSnapshotCheck = Date.now();
    const reason = await this.#retry(() => this.#snapshotNeeded());
    if (reason !== undefined) await this.#snapshot(reason, tally ?? { snapshots: [] }, false);
  }

  async #snapshotNeeded(): Promise<string | undefined> {
    const end = await lastMessage(this.#broker, this.stream, this.subjects.end);
    const info = await streamInfo(this.#broker, this.stream);
    if (info !== undefined) checkNoPerSubjectLimit(this.stream, info.config);
    if (info !== undefined) this.#maxMsgSize = info.config.max_msg_size ?? -1;
    const first = info?.state.first_seq ?? 0;
    // No snapshot end in a stream that has dropped messages: retention took it (or its parts).
    if (end === undefined) return first > 1 ? 'SNAPSHOT_PAST_RETENTION' : 'STREAM_HAD_NO_SNAPSHOT';
    const start = Number(end.header?.get(HEADER.snapshotStart));
    if (!Number.isSafeInteger(start) || start < first) return 'SNAPSHOT_PAST_RETENTION';
    return (await this.#formatAfterSnapshot(end)) ? 'STREAM_FORMAT_ADDED' : undefined;
  }

  /**
   * Whether the first batch of one of the publisher's formats after the
   * stream's last snapshot (its end `end`) starts after the snapshot's seq:
   * the format was added to the publisher after the snapshot (publish
   * --format jsonl,segment after publishing JSONL), so a subscriber of that
   * format, which starts from the last snapshot, met a gap there (BATCH_GAP,
   * run after run, rebuilding from the same snapshot each time). A snapshot
   * published then (its position left where it is, as for retention) is one
   * its batches start from. Asked of each snapshot until every format has a
   * batch after it that continues it (#formatsCheckedAt).
   */
  async #formatAfterSnapshot(end: NonNullable<Awaited<ReturnType<typeof lastMessage>>>): Promise<boolean> {
    if (this.#formatsCheckedAt === end.seq || end.header?.get(HEADER.source) !== this.sourceId) return false;
    const snapSeq = Number(end.header.get(HEADER.toSeq));
    if (!Number.isSafeInteger(snapSeq)) return false;
    let all = true;
    for (const f of this.formats) {
      const m = await messageAtOrAfter(this.#broker, this.stream, end.seq + 1, subjectsOf(this.sourceId, f).batch);
      if (m === undefined) all = false;
      else if (Number(m.header.get(HEADER.fromSeq)) > snapSeq) return true;
    }
    if (all) this.#formatsCheckedAt = end.seq;
    return false;
  }

  #stopped(): boolean {
    return this.#options.signal?.aborted === true;
  }

  /**
   * Publishes the batch windows after `cursor`, each in every format (one
   * message per format, on its format's subject), up to PIPELINE windows
   * waiting for the broker's ack at once (one round trip per batch, on a busy
   * machine two wake-ups of the broker and of us, was what held fan-out
   * back: bench/fan-out.ts); false once it has published through the
   * source's high-water mark as its last read found it. Each message
   * after the first carries the previous one's Nats-Msg-Id as the one the
   * stream must hold last (Nats-Expected-Last-Msg-Id), so the broker never
   * stores a message whose predecessor it lost: the stream's batches stay
   * contiguous in every format. The first window's messages (a stream may be
   * shared by several sources' publishers: no message of the stream can be
   * expected last) expect the last message on their subject, which only
   * this source's publishers use, to be the one this publisher had
   * acknowledged there (Nats-Expected-Last-Subject-Sequence): a stream that
   * lost it (its store restored from an older copy while this publisher
   * ran) refuses it, and the position is read again from the stream
   * (#reposition). A copy the broker already has (the same Nats-Msg-Id
   * within its dedup window) is acknowledged as a duplicate before any
   * expectation is checked. A publish that fails, or is refused (another
   * source's publisher on the same stream, a message lost in an outage), is
   * sent again alone, as a first one, after the ones behind it have had
   * their answers; those are sent again too (the same ids: a copy the
   * broker kept is dropped as a duplicate). A window that cannot be read
   * (the position no longer continues) is thrown once the ones before it
   * are answered.
   */
  async #nextBatches(cursor: string, tally: { batches: number; events: number; duplicates: number }): Promise<boolean> {
    const inFlight: { readonly b: Prepared; readonly acks: readonly Promise<PubAck>[] }[] = [];
    let at = cursor;
    let ended = false;
    let unreadable: { readonly err: unknown } | undefined;
    for (;;) {
      while (!ended && inFlight.length < PIPELINE && !this.#stopped()) {
        let b: Prepared | undefined;
        try {
          b = this.#prepare(at);
        } catch (err) {
          unreadable = { err };
        }
        if (b === undefined) {
          ended = true;
          break;
        }
        let previous = inFlight.at(-1)?.b.messages.at(-1)?.msgID;
        // Nothing in flight: every message before this window was acknowledged, and #subjectSeqs holds where each ended.
        const chainStarts = previous === undefined;
        const acks: Promise<PubAck>[] = [];
        for (const m of b.messages) {
          const ack = this.#broker.js.publish(m.subject, m.data, {
            msgID: m.msgID,
            headers: m.headers(),
            expect: {
              streamName: this.stream,
              ...(previous === undefined ? {} : { lastMsgID: previous }),
              ...(chainStarts ? this.#lastOn(m.subject) : {}),
            },
            timeout: 5000,
          });
          ack.catch(() => {}); // answered below, in order
          acks.push(ack);
          previous = m.msgID;
        }
        inFlight.push({ b, acks });
        at = b.batch.cursor;
        // What the source committed since the read is the next pass's (a follower's comes within 5 ms: publish-loop.ts):
        // reading again at once found nothing, or sent a message of an event or two, each costing every subscriber.
        if (b.atEnd) ended = true;
      }
      const first = inFlight.shift();
      if (first === undefined) {
        if (unreadable !== undefined && !this.#stopped()) throw unreadable.err;
        return false; // all of it published (or stopped)
      }
      let duplicate = true;
      try {
        for (const [i, ack] of first.acks.entries()) {
          const a = await ack;
          this.#subjectSeqs.set((first.b.messages[i] as Prepared['messages'][number]).subject, a.seq);
          duplicate &&= a.duplicate;
        }
      } catch (err) {
        // What the broker stored of the ones behind it is in order after it; they are published again from here.
        await Promise.allSettled([...first.acks, ...inFlight.flatMap((f) => f.acks)]);
        if (isWrongLastSequence(err)) return await this.#reposition(err);
        inFlight.length = 0;
        ended = false;
        unreadable = undefined;
        at = first.b.batch.cursor;
        duplicate = true;
        for (const m of first.b.messages) {
          let ack: PubAck | undefined;
          try {
            ack = await this.#publish(m.subject, m.data, m.msgID, m.headers(), this.#subjectSeqs.get(m.subject));
          } catch (e) {
            if (isWrongLastSequence(e)) return await this.#reposition(e);
            throw e;
          }
          if (ack === undefined) return false; // stopped
          this.#subjectSeqs.set(m.subject, ack.seq);
          duplicate &&= ack.duplicate;
        }
      }
      this.#acknowledged(first.b.batch.cursor);
      tally.batches++;
      tally.events += first.b.batch.events;
      if (duplicate) tally.duplicates++;
      this.#options.onAck?.({ events: first.b.batch.events, duplicate });
    }
  }

  /** The expectation of the first message on `subject` in a chain: the last message on it is the one this publisher knows. */
  #lastOn(subject: string): { lastSubjectSequence?: number } {
    const seq = this.#subjectSeqs.get(subject);
    return seq === undefined ? {} : { lastSubjectSequence: seq };
  }

  /** The next batch window after `cursor`, as its message in each format; undefined when there is nothing more. */
  #prepare(cursor: string): Prepared | undefined {
    const span = this.#options.batchSeqs ?? defaultBatchSeqs(this.formats);
    const from = decodeCursor(cursor).seq;
    let through = (Math.floor(from / span) + 1) * span;
    const budget = this.#budget();
    for (;;) {
      // Every format's message of one window, built before any is sent: a window too large in one is halved for all.
      const built: { format: BatchFormat; data: Buffer; b: WindowBatch }[] = [];
      for (const format of this.formats) {
        // Each format reads the journal on its own: the next ones end where the first one ended, whatever the source
        // committed between two reads, so that a window covers the same seqs in every format (docs/broker.md).
        const upTo = built[0]?.b.toSeq ?? through;
        const one =
          format === 'jsonl' ? jsonlMessage(this.db, cursor, span, upTo) : segmentMessage(this.db, this.sourceId, cursor, span, upTo);
        if (one === undefined) return undefined;
        built.push({ format, ...one });
      }
      const b = (built[0] as (typeof built)[number]).b;
      const largest = Math.max(...built.map((m) => m.data.length));
      if (largest > budget) {
        if (b.toSeq - b.fromSeq > 1) {
          // Cut in proportion to the size (with a tenth to spare), at most in half: one build again, not one per halving
          // (a window of wide rows could be several times the budget). A function of the window's own events, so a
          // window published again is cut the same way (the same Nats-Msg-Id).
          const seqs = b.toSeq - b.fromSeq;
          through = b.fromSeq + Math.max(1, Math.min(Math.floor(seqs / 2), Math.floor((seqs * budget * 0.9) / largest)));
          continue;
        }
        throw this.#tooLarge(`the event at seq ${b.toSeq}`, largest);
      }
      const messages = built.map((m) => ({
        subject: subjectsOf(this.sourceId, m.format).batch,
        data: m.data,
        msgID: batchMsgId(this.sourceId, m.b.fromSeq, m.b.toSeq, m.format, historyOf(m.b.cursor)),
        headers: () => {
          const h = natsHeaders();
          h.set(HEADER.source, this.sourceId);
          h.set(HEADER.fromSeq, String(m.b.fromSeq));
          h.set(HEADER.toSeq, String(m.b.toSeq));
          h.set(HEADER.cursor, m.b.cursor);
          if (m.format === 'segment') {
            h.set(HEADER.events, String(m.b.events));
            h.set(HEADER.encoding, textEncoding(this.db));
          }
          return h;
        },
      }));
      return { batch: b, messages, atEnd: b.toSeq < through };
    }
  }

  /** After the broker's ack: the position moves, and is saved behind (the state file may lag, never lead). */
  #acknowledged(cursor: string): void {
    this.#saved.save(cursor);
    this.#cursor = cursor;
  }

  /** Bytes of lines one message may carry (headroom for headers under max_payload and the stream's max_msg_size). */
  #budget(): number {
    return lineBudget(this.#broker.maxPayload, this.#maxMsgSize);
  }

  /** The error for one line (an event, a snapshot row) larger than a message may carry: it names the limit that binds. */
  #tooLarge(what: string, bytes: number): Error {
    return boundByStream(this.#broker.maxPayload, this.#maxMsgSize)
      ? tooLargeForStream(this.stream, this.#maxMsgSize, what, bytes, this.#budget())
      : tooLarge(what, bytes, this.#budget());
  }

  /**
   * Publishes a snapshot (publish-snapshot.ts). With `moveTo` the position
   * becomes the snapshot's (the first one, or one after a position that
   * cannot be continued); a snapshot republished for retention leaves the
   * position alone, so followers see no gap.
   */
  async #snapshot(reason: string, tally: { snapshots: PublishedSnapshotReport[] }, moveTo = true): Promise<void> {
    for (;;) {
      const made = this.#streamsMade;
      // Republished for retention, it holds the tables the position's batches carry: a subscriber that starts from it gets every change of each.
      const tables = moveTo || this.#cursor === undefined ? undefined : decodeCursor(this.#cursor).tables;
      // Starting a new position, it says how far the history it replaces had got on the stream: a subscriber past its seq
      // that followed that history is rebuilt from it, also once the batches that showed it are gone (#purgeLeftOut).
      const replaces = moveTo && this.#cursor !== undefined ? decodeCursor(this.#cursor).seq : undefined;
      const snap = await publishSnapshot(
        this.db,
        {
          sourceId: this.sourceId,
          subjects: this.subjects,
          budget: this.#budget(),
          tooLarge: (what, bytes) => this.#tooLarge(what, bytes),
          send: (subject, data, msgID, headers) => this.#publish(subject, data, msgID, headers),
          fits: async (size) => {
            const info = await this.#retry(() => streamInfo(this.#broker, this.stream));
            if (info !== undefined) checkSnapshotFits(this.stream, info.config, size);
          },
          held: async (size, start) => {
            const info = await this.#retry(() => streamInfo(this.#broker, this.stream));
            if (info !== undefined && info.state.first_seq > start)
              throw snapshotDropped(this.stream, info.config, size, start, info.state.first_seq);
          },
        },
        tables,
        replaces,
      ).catch(again);
      // The stream's max_msg_size was lowered while its parts went out: publish it whole again, in parts cut to it.
      if (snap === AGAIN) continue;
      if (snap === undefined) return;
      // The stream was made again while its parts went out: the first ones went with the old stream; publish it whole again.
      if (made !== this.#streamsMade) continue;
      this.#log(
        `sluice publish: published a snapshot at seq ${snap.seq} (${snap.rows} rows, ${snap.parts + 1} messages) because ${SNAPSHOT_WHY[reason] ?? 'the position could not be continued'} (${reason})`,
      );
      tally.snapshots.push({ seq: snap.seq, rows: snap.rows, reason, ...aliasFields(reason) });
      if (moveTo) this.#acknowledged(snap.cursor);
      if (moveTo) await this.#purgeLeftOut(reason, snap.firstSeq);
      return;
    }
  }

  /**
   * After a snapshot that starts a new position because the old one could
   * not be continued (a table re-armed: its columns left out of capture
   * changed, say): the messages before it may carry values of columns the
   * source now leaves out (enable --exclude), and a stream keeps them until
   * its limits drop them. When the source leaves any column out, they are
   * purged: no subscriber can go on past that break without the new
   * snapshot anyway (one behind it rebuilds from it,
   * SUBSCRIBER_BEHIND_STREAM), and nobody reading the server's store finds
   * the values. Only this source's messages (its subjects, every format's):
   * a stream shared with other sources (--stream) keeps theirs, which their
   * subscribers still need. Best effort: a purge that fails is logged, and
   * the next such snapshot tries again.
   */
  async #purgeLeftOut(reason: string, firstSeq: number): Promise<void> {
    if (reason === 'STREAM_HAD_NO_SNAPSHOT' || reason === 'STREAM_TABLES_ADDED') return;
    const leftOut = readTables(this.db).flatMap((t) => t.excluded.map((c) => `${t.name}.${c}`));
    if (leftOut.length === 0) return;
    try {
      const r = await this.#retry(() => this.#broker.jsm.streams.purge(this.stream, { filter: this.subjects.all, seq: firstSeq }));
      if (r !== undefined && r.purged > 0)
        this.#log(
          `sluice publish: purged the ${r.purged} messages of source ${this.sourceId} in stream ${this.stream} before this snapshot (${reason}): they may hold values of ${leftOut.join(', ')}, which the source now leaves out of capture; a subscriber behind them rebuilds from the snapshot`,
        );
    } catch (err) {
      this.#log(
        `sluice publish: the messages of source ${this.sourceId} in stream ${this.stream} before this snapshot could not be purged (${String(err)}); the next such snapshot tries again`,
      );
    }
  }

  /**
   * Publishes one message and waits for the broker's ack, through outages;
   * undefined if stopped first. With `lastSubjectSequence`, the stream's last
   * message on `subject` must be at that stream sequence (0: none): else the
   * broker refuses it (isWrongLastSequence), unless it has the message
   * already (a duplicate).
   */
  async #publish(subject: string, data: Uint8Array, msgID: string, headers: ReturnType<typeof natsHeaders>, lastSubjectSequence?: number) {
    const expect = { streamName: this.stream, ...(lastSubjectSequence === undefined ? {} : { lastSubjectSequence }) };
    try {
      return await this.#retry(() => this.#broker.js.publish(subject, data, { msgID, headers, expect, timeout: 5000 }));
    } catch (err) {
      if (isOverMaxMsgSize(err)) {
        // Built under the max_msg_size last read: one lowered since is read, and the message cut again to it (LimitLowered).
        const before = this.#budget();
        const config = (await streamInfo(this.#broker, this.stream).catch(() => undefined))?.config;
        if (config !== undefined) this.#maxMsgSize = config.max_msg_size ?? -1;
        if (this.#budget() < before) throw new LimitLowered();
        throw overMaxMsgSize(this.stream, config?.max_msg_size, data.length, err);
      }
      if (!isStreamFull(err)) throw err;
      throw streamFull(this.stream, (await streamInfo(this.#broker, this.stream).catch(() => undefined))?.config, err);
    }
  }

  /** Runs `fn` through outages (nats.ts): a server without the stream gets it made again before the next try. */
  #retry<T>(fn: () => Promise<T>): Promise<T | undefined> {
    return untilAnswered(fn, {
      what: `sluice publish: NATS at ${this.#broker.url}`,
      lost: `stream ${this.stream}`,
      resumed: 'publishing',
      log: this.#log,
      signal: this.#options.signal,
      remake: () => this.#remakeStream(),
    });
  }

  /**
   * Makes the stream again (if it is missing): a server that came back on an
   * empty store. Its first snapshot check publishes a snapshot into it (the
   * new stream has none), so nothing is lost.
   */
  async #remakeStream(): Promise<void> {
    const before = await streamInfo(this.#broker, this.stream);
    await ensureStream(this.#broker, this.stream, this.sourceId, this.#log);
    // The idle follower's next check must not wait its interval: a new stream has no snapshot for subscribers to start from.
    this.#lastSnapshotCheck = 0;
    if (before !== undefined) return; // it was there: the server's JetStream was not answering yet
    this.#streamsMade++;
    this.#subjectSeqs.clear(); // the new stream holds nothing on them
    this.#log(`sluice publish: made stream ${this.stream} again on NATS at ${this.#broker.url} (the server came back without it)`);
  }
}

/** The server refused a message over the stream's max_msg_size, which was lowered since it was read: cut again (#publish). */
class LimitLowered extends Error {}
const AGAIN = Symbol('again');
/** AGAIN for LimitLowered (a message to cut again), else `err` thrown on. */
function again(err: unknown): typeof AGAIN {
  if (err instanceof LimitLowered) return AGAIN;
  throw err;
}

/** A cursor's seq. */
function seqOf(cursor: string): number {
  return decodeCursor(cursor).seq;
}

/**
 * The history a batch ending at `cursor` belongs to, for its message id: the
 * digest of the journal event the cursor anchors on (the newest at or below
 * its seq: seq, table, op, clock and first columns), `none` without one.
 */
function historyOf(cursor: string): string {
  return decodeCursor(cursor).anchor?.digest ?? 'none';
}

/** The cursor furthest on of `cursors` (undefined: none). */
function furthest(cursors: readonly (string | undefined)[]): string | undefined {
  return cursors.filter((c) => c !== undefined).sort((a, b) => seqOf(b) - seqOf(a))[0];
}

/** A window's JSONL message: its event lines and its batch marker (export.ts writeBatch). */
function jsonlMessage(db: Db, cursor: string, span: number, through: number) {
  const sink = new MemorySink();
  const b = writeBatch(db, sink, cursor, { limit: span, throughSeq: through });
  return b === undefined ? undefined : { data: sink.bytes(), b };
}

/** Lines of one message, in memory. */
class MemorySink implements LineWriter {
  #lines: string[] = [];
  write(obj: unknown): string {
    const line = `${JSON.stringify(obj)}\n`;
    this.#lines.push(line);
    return line;
  }
  flush(): void {}
  bytes(): Buffer {
    return Buffer.from(this.#lines.join(''));
  }
}

/** Whether the source captures a table (of the default set: not counter mode) that the position `cursor` does not cover. */
function addedTables(db: Db, cursor: string): boolean {
  const covered = new Set(decodeCursor(cursor).tables.map(foldIdent));
  return readTables(db).some((t) => t.mode !== 'counter' && !covered.has(foldIdent(t.name)));
}
