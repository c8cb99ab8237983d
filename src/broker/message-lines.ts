import { JetStreamError, type Consumer, type JsMsg } from '@nats-io/jetstream';
import fs from 'node:fs';
import {
  checkSegment,
  checkSegmentBytes,
  readCheckedLines,
  segmentItems,
  type ExportItem,
  type ReadOptions,
  type ReadTotals,
  type SegmentRef,
} from '../export/index.ts';
import { isStoreLost, type Broker } from './nats.ts';
import type { BatchFormat, SourceSubjects } from './subjects.ts';
import { HEADER, headerCount } from './subjects.ts';
import { errorCode } from '../errors.ts';

/*
 * The lines a subscriber's messages carry, for the checking reader. A
 * message is acknowledged only once what it carries is committed: the
 * reader asks for the line after a batch's marker (or a snapshot's) only
 * when the applier is done with that batch, and the applier says when it
 * has committed (`committed`, after each commit: batches already delivered
 * share one transaction, importer.ts), so that is when its message, and a
 * snapshot's parts before it, are acked. Messages a subscriber does not
 * need are acked and skipped: snapshots while it follows batches, batches
 * before the snapshot it starts from, a redelivered message it has passed.
 * A snapshot it starts from that the stream no longer holds whole stops it
 * (SnapshotGone).
 * A message at or below the last stream sequence read that is not a
 * redelivery means the stream went back (StreamWentBack).
 */

export interface Start {
  /** The stream sequence to start at. */
  readonly streamSeq: number;
  /** The snapshot (its id) to start from, whose first part is at streamSeq. */
  readonly snapshot?: string | undefined;
  /** With `snapshot`: the stream sequence of its end, as planned (a message of the source past it means the snapshot is gone: SnapshotGone). */
  readonly snapshotEnd?: number | undefined;
}

/**
 * Segment messages up to this size are checked and read in memory, on a
 * connection of their own (checkSegmentBytes), and never attached to the
 * target: attaching one and detaching it made every statement the target's
 * connection had prepared be prepared again, and writing it to a file and
 * removing it cost a file system's work, together most of a subscriber's
 * CPU for a message of a few events (bench/fan-out.ts --format segment).
 * Their events are decoded in JavaScript, as a JSONL batch's are, which
 * costs more per event than the set-based read of an attached segment: a
 * larger message (a burst's, a snapshot's part) is attached.
 */
export const SEGMENT_IN_MEMORY_BYTES = 64 * 1024;

export interface MessageLinesOptions {
  readonly subjects: SourceSubjects;
  readonly start: Start;
  /** Stop after this stream sequence, the source's last message (undefined: follow until `signal`). */
  readonly endSeq: number | undefined;
  readonly signal: AbortSignal | undefined;
  /** Names the stream in errors. */
  readonly label: string;
  /** The format of the batches read (subjects.batch is its subject). */
  readonly format: BatchFormat;
  /** Writes a segment message's bytes to a file of its own, named by its stream sequence; returns its path. */
  readonly segmentFile: (streamSeq: number, data: Uint8Array) => string;
  /**
   * Whether the target wants a snapshot met while following batches (its
   * end's To-Seq and cursor headers; subscribe-wants.ts): then the reader
   * stops with SnapshotWanted, and subscribe starts again from it.
   */
  readonly wanted?: (toSeq: string | undefined, cursor: string | undefined) => boolean;
}

/**
 * A snapshot met while following batches lies below the seq the target
 * reached (the source went back: subscribe weighs the history after it),
 * holds a table the target needs, or does not continue a cursor of the
 * target (subscribe-wants.ts): the reader
 * stops before it, what was applied is committed, and subscribe starts again
 * from the snapshot at its end's stream sequence `endSeq`.
 */
export class SnapshotWanted extends Error {
  readonly endSeq: number;
  constructor(label: string, endSeq: number) {
    super(
      `the snapshot whose end is message ${endSeq} of ${label} lies below the seq the target reached, holds a table the target needs, or does not continue the target's cursor`,
    );
    this.name = 'SnapshotWanted';
    this.endSeq = endSeq;
  }
}

/**
 * The snapshot the reader was part-way through is no longer whole in the
 * stream: its publisher purged it (a snapshot that starts a new position
 * while the source leaves a column out of capture purges what came before),
 * or the stream's retention (max_age, max_msgs, max_bytes) dropped part of
 * it. Seen as a part missing (each part's Nats-Msg-Id ends with its number),
 * as an end that counts more parts than came, or as a message of the source
 * past the snapshot's end. Nothing of the snapshot was committed or
 * acknowledged; subscribe plans again from the target's cursor, which
 * starts from the stream's newest snapshot. (Before, the reader skipped
 * every other message while it waited for the rest, the new snapshot and
 * every batch after it too: a one-shot run ended having applied nothing.)
 */
export class SnapshotGone extends Error {
  readonly snapshot: string | undefined;
  readonly why: string;
  constructor(label: string, snapshot: string | undefined, why: string) {
    super(
      `the snapshot ${snapshot ?? '(no id)'} the subscriber was reading is gone from ${label} (${why}): its publisher purged it (a newer snapshot replaced it), or the stream's retention dropped part of it`,
    );
    this.name = 'SnapshotGone';
    this.snapshot = snapshot;
    this.why = why;
  }
}

/** The number a snapshot part's Nats-Msg-Id ends with (`<source>:snapshot:<id>:<n>`; undefined: none). */
function partNumber(m: JsMsg): number | undefined {
  const id = m.headers?.get('Nats-Msg-Id') ?? '';
  const n = id.slice(id.lastIndexOf(':') + 1);
  return /^[0-9]+$/.test(n) ? Number(n) : undefined;
}

/**
 * The subscriber's consumer (or its whole stream) is gone from the server: a
 * server that came back on an empty store, or a consumer deleted under it.
 * Nothing of the batch in flight was committed or acknowledged; subscribe
 * plans again from the target's cursor and makes the consumer again.
 */
export class ConsumerGone extends Error {
  constructor(label: string, cause: unknown) {
    super(`the consumer of ${label} is gone from the server (${(cause as Error)?.message ?? String(cause)})`, { cause });
    this.name = 'ConsumerGone';
  }
}

/**
 * The stream delivered a message at or below the last stream sequence this
 * reader saw that is not that message again (another Nats-Msg-Id there, or
 * one never delivered before): the stream went back, as when the broker's
 * store is restored from an older copy, and reuses those sequences for
 * other messages (a publisher publishing again what the stream lost).
 * Nothing of the batch in flight was committed or acknowledged; subscribe
 * plans again from the target's cursor, as after a lost consumer.
 */
export class StreamWentBack extends Error {
  constructor(label: string, seq: number, last: number, why: string) {
    super(
      `${label} went back: message ${seq}, at or below message ${last} already read, ${why} (the broker's store restored from an older copy?)`,
    );
    this.name = 'StreamWentBack';
  }
}

/** What tells a message from another one at the same stream sequence: its subject and Nats-Msg-Id (every message the publisher sends has one). */
function identity(m: JsMsg): string {
  return `${m.subject} ${m.headers?.get('Nats-Msg-Id') ?? ''} ${m.data.byteLength}`;
}

/** Whether the consumer's messages stopped because the server no longer has the consumer or the stream. */
function isGone(err: unknown): boolean {
  if (isStoreLost(err)) return true;
  // A pull answered 409 "consumer deleted" / "stream deleted" (JetStreamStatusError).
  return err instanceof JetStreamError && errorCode(err) === 409 && /deleted/i.test(err.message);
}

/** Line numbers kept for naming where a line came from (the oldest are forgotten). */
const KEEP = 10_000;

/** The last batch or snapshot end handed to the reader. */
export interface LastMessage {
  readonly snapshot: boolean;
  /** Event lines of a batch (0 for a snapshot). */
  readonly events: number;
  /** When the broker stored it (ms since the epoch). */
  readonly storedMs: number;
  /** The seq it reaches (Sluice-To-Seq): a batch's last, a snapshot's high-water mark. */
  readonly toSeq: number;
  /** Messages the consumer had not delivered yet when it delivered this one. */
  readonly pending: number;
}

export function messageLines(_b: Broker, consumer: Consumer, o: MessageLinesOptions) {
  let count = 0;
  /** Lines yielded (the reader numbers them from 1). */
  let lineCount = 0;
  let lastMessage: LastMessage | undefined;
  /** The consumer's messages while they are read (stopped by close() when the applier fails mid-stream). */
  let active: { stop(): void } | undefined;
  /** Messages the applier is done with (it asked for the line after them), acked at its next commit. */
  const done: JsMsg[] = [];
  /** The messages of the batch (or snapshot) whose last line the reader holds: the applier is applying it. */
  let handed: { readonly msgs: JsMsg[] } | undefined;
  /** The first line number of each message, and its stream sequence. */
  const firstLines: number[] = [];
  const seqs: number[] = [];
  // Called for every line (parse errors carry it): a binary search over the messages' first lines.
  const where = (n: number) => {
    let lo = 0;
    let hi = firstLines.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((firstLines[mid] as number) <= n) lo = mid;
      else hi = mid - 1;
    }
    const first = firstLines[lo];
    return first === undefined || first > n ? `${o.label}:line ${n}` : `${o.label} message ${seqs[lo]} line ${n - first + 1}`;
  };

  async function* lines(): AsyncGenerator<string | SegmentRef> {
    if (o.endSeq !== undefined && o.start.streamSeq > o.endSeq) return;
    let messages: Awaited<ReturnType<Consumer['consume']>>;
    try {
      // Stop (not wait for ever, logging nothing) when the server no longer has the consumer or its stream.
      messages = await consumer.consume({ max_messages: 256, abort_on_missing_resource: true });
    } catch (err) {
      throw isGone(err) ? new ConsumerGone(o.label, err) : err;
    }
    active = messages;
    const stop = () => void messages.stop();
    o.signal?.addEventListener('abort', stop);
    if (o.signal?.aborted === true) stop();
    let last = o.start.streamSeq - 1;
    let inSnapshot = o.start.snapshot !== undefined;
    /** The number of the snapshot's next part. */
    let nextPart = 0;
    const gone = (why: string) => new SnapshotGone(o.label, o.start.snapshot, why);
    const pending: JsMsg[] = [];
    /** What each recent message read was (identity), by its stream sequence: a redelivery is the same message again. */
    const read = new Map<number, string>();
    try {
      for await (const m of messages) {
        const seq = m.seq;
        if (seq <= last) {
          const was = read.get(seq);
          // Redelivered (its ack lost, or a server that came back with older consumer state): already passed on.
          if (was === identity(m) || (was === undefined && m.info.deliveryCount > 1)) {
            m.ack();
            continue;
          }
          throw new StreamWentBack(
            o.label,
            seq,
            last,
            was === undefined ? 'was never delivered before' : 'is not the message read there before (another Nats-Msg-Id)',
          );
        }
        last = seq;
        read.set(seq, identity(m));
        if (read.size > KEEP) for (const k of [...read.keys()].slice(0, KEEP / 2)) read.delete(k);
        count++;
        if (!inSnapshot && m.subject === o.subjects.end && o.wanted?.(m.headers?.get(HEADER.toSeq), m.headers?.get(HEADER.cursor)) === true)
          throw new SnapshotWanted(o.label, seq);
        const pass = inSnapshot
          ? (m.subject === o.subjects.part || m.subject === o.subjects.end) && m.headers?.get(HEADER.snapshot) === o.start.snapshot
          : m.subject === o.subjects.batch;
        if (inSnapshot) {
          // Its parts come in order, each once (a redelivery was passed above), and its end after them.
          const end = o.start.snapshotEnd;
          if (!pass && end !== undefined && seq > end)
            throw gone(`message ${seq} of the source comes after message ${end}, the snapshot's end, which did not come`);
          if (pass && m.subject === o.subjects.part) {
            const n = partNumber(m);
            if (n !== undefined && n !== nextPart) throw gone(`its part ${nextPart} did not come: message ${seq} is its part ${n}`);
            nextPart = (n ?? nextPart) + 1;
          }
          // (An end of the release before has no count: it counts nothing.)
          const parts = pass && m.subject === o.subjects.end ? headerCount(m.headers, HEADER.snapshotParts) : NaN;
          if (Number.isSafeInteger(parts) && parts !== nextPart) throw gone(`its end counts ${parts} parts, and ${nextPart} of them came`);
        }
        if (!pass) m.ack();
        else {
          pending.push(m);
          firstLines.push(lineCount + 1);
          seqs.push(seq);
          if (firstLines.length > KEEP) {
            firstLines.splice(0, KEEP / 2);
            seqs.splice(0, KEEP / 2);
          }
          // A segment message (docs/segment.md) goes to the reader whole: a small one as its bytes (checked and read
          // in memory), a larger one as a file of its own (attached to the target); a JSONL one as its lines.
          const segment = o.format === 'segment' && m.subject === o.subjects.batch;
          const inMemory = segment && m.data.byteLength <= SEGMENT_IN_MEMORY_BYTES;
          const file = segment && !inMemory ? o.segmentFile(seq, m.data) : undefined;
          const parts: (string | SegmentRef)[] = inMemory
            ? [{ segment: `${o.label} message ${seq}`, data: m.data }]
            : file !== undefined
              ? [{ segment: file }]
              : Buffer.from(m.data).toString('utf8').split('\n');
          if (parts.at(-1) === '') parts.pop();
          if (m.subject !== o.subjects.part)
            lastMessage = {
              snapshot: m.subject === o.subjects.end,
              events: segment
                ? Number(m.headers?.get(HEADER.events) ?? 0)
                : m.subject === o.subjects.batch
                  ? Math.max(0, parts.length - 1)
                  : 0,
              storedMs: Number(m.info.timestampNanos) / 1e6,
              toSeq: Number(m.headers?.get(HEADER.toSeq) ?? 0),
              pending: m.info.pending,
            };
          const ends = m.subject !== o.subjects.part;
          for (let i = 0; i < parts.length; i++) {
            lineCount++;
            // While the reader holds a batch's (or snapshot's) last line, the applier applies it: a commit then covers it.
            if (ends && i === parts.length - 1) handed = { msgs: pending };
            yield parts[i] as string | SegmentRef;
          }
          handed = undefined;
          // Here the reader has asked for the next line: the applier is done with what this message ended (a batch, a snapshot).
          if (file !== undefined) fs.rmSync(file, { force: true });
          if (ends) {
            done.push(...pending.splice(0));
            if (m.subject === o.subjects.end) inSnapshot = false;
          }
        }
        if (o.signal?.aborted === true) break;
        // A one-shot run stops at its source's last message, or at the last one its consumer has (that one deleted since).
        if (o.endSeq !== undefined && (seq >= o.endSeq || m.info.pending === 0)) {
          // The snapshot's end was at or before that last message: it is gone, and with it what the target starts from.
          if (inSnapshot) throw gone(`the stream holds nothing of it after message ${seq}`);
          break;
        }
      }
    } catch (err) {
      throw isGone(err) ? new ConsumerGone(o.label, err) : err;
    } finally {
      o.signal?.removeEventListener('abort', stop);
      messages.stop();
    }
  }

  return {
    /** The checked items of the stream's lines, every line of source `sourceId`. */
    read: (sourceId: string, options: ReadOptions): AsyncGenerator<ExportItem, ReadTotals> =>
      readCheckedLines(
        {
          lines: lines(),
          where,
          sourceId,
          segment: (ref, n) => {
            const seg = ref.data === undefined ? checkSegment(ref.segment) : checkSegmentBytes(ref.segment, ref.data);
            return { sourceId: seg.meta.sourceId, items: segmentItems(seg, options, n) };
          },
        },
        options,
      ),
    /** Messages read so far. */
    messages: () => count,
    /**
     * The applier committed: acks the messages it is done with, and the one
     * whose last line it holds (the batch it has just applied: it commits
     * only after applying what it read, never in the middle of a batch).
     */
    committed: () => {
      for (const m of done.splice(0)) m.ack();
      if (handed !== undefined) for (const m of handed.msgs.splice(0)) m.ack();
    },
    /** Lines handed to the reader so far. */
    lines: () => lineCount,
    /** The batch or snapshot whose marker the reader read last. */
    last: () => lastMessage,
    /**
     * Stops reading. The applier does not close the reader when it fails (a
     * suspension, a refused line): without this the consumer would go on
     * pulling, and keep the process alive.
     */
    close: () => {
      // stop(), not close(): close() waits for the iteration to run to its end, which a suspended reader never does.
      active?.stop();
    },
  };
}
