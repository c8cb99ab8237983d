import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { PubAck } from '@nats-io/jetstream';
import type { Db } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { LineSink, writeSnapshot, type LineWriter } from '../export/index.ts';
import { HEADER, type SourceSubjects } from './subjects.ts';
import type { SnapshotSize } from './stream-limits.ts';

/*
 * A snapshot on the stream: written to a temp file first (the source's one
 * read transaction, streamed, never all in memory), then sent as parts of
 * table and row lines, each under the server's max_payload, then its end:
 * the snapshot marker, with the stream sequence of its first part
 * (Sluice-Snapshot-Start) and how many parts it has (Sluice-Snapshot-Parts;
 * each part's Nats-Msg-Id ends with its number, from 0). Each snapshot has an id of its own, so one
 * published again at the same seq is not dropped by the dedup window.
 */

/** Why a snapshot was published, in words, by its reason code. */
export const SNAPSHOT_WHY: Readonly<Record<string, string>> = {
  STREAM_HAD_NO_SNAPSHOT: 'the stream had none',
  SNAPSHOT_PAST_RETENTION: "the stream's retention no longer reaches back to the last one",
  STREAM_TABLES_ADDED: 'the source captures a table its stream did not carry (enabled after publishing began)',
  STREAM_FORMAT_ADDED: "a format's batches in the stream start after its last snapshot (the format was added to the publisher later)",
};

export interface Sender {
  readonly sourceId: string;
  readonly subjects: SourceSubjects;
  /** Bytes of lines one message may carry. */
  readonly budget: number;
  /** The error for one line larger than the budget (default: tooLarge, for the server's max_payload). */
  readonly tooLarge?: (what: string, bytes: number) => Error;
  /** Publishes one message and waits for the broker's ack (undefined: stopped first). */
  send(subject: string, data: Uint8Array, msgID: string, headers: ReturnType<typeof natsHeaders>): Promise<PubAck | undefined>;
  /** Before anything is sent: throws if the stream cannot hold a snapshot of this size (stream-limits.ts). */
  fits(size: SnapshotSize): Promise<void>;
  /** After its end was acknowledged: throws if the stream no longer holds its first part, at stream seq `start`. */
  held(size: SnapshotSize, start: number): Promise<void>;
}

export interface PublishedSnapshot {
  readonly cursor: string;
  readonly seq: number;
  readonly rows: number;
  /** Part messages (the end is one more). */
  readonly parts: number;
  /** The stream sequence of its first message. */
  readonly firstSeq: number;
}

/**
 * Publishes a snapshot of the source; undefined if stopped before its end was
 * acknowledged. `replacesSeq`: it starts a new position, and the history
 * before it had reached that seq (its end says so: HEADER.replacesSeq).
 */
export async function publishSnapshot(
  db: Db,
  s: Sender,
  tables?: readonly string[],
  replacesSeq?: number,
): Promise<PublishedSnapshot | undefined> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-publish-'));
  const file = path.join(dir, 'snapshot.jsonl');
  try {
    const fd = fs.openSync(file, 'w');
    let snap: ReturnType<typeof writeSnapshot>;
    let counted: PartCount;
    try {
      const sink = new LineSink(fd);
      snap = writeSnapshot(db, (counted = new PartCount(sink, s.budget)), tables);
      sink.flush(false);
    } finally {
      fs.closeSync(fd);
    }
    const total = counted.size();
    await s.fits(total);
    const id = `${snap.seq}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const budget = s.budget;
    const header = () => {
      const h = natsHeaders();
      h.set(HEADER.source, s.sourceId);
      h.set(HEADER.snapshot, id);
      h.set(HEADER.toSeq, String(snap.seq));
      return h;
    };
    let part: string[] = [];
    let size = 0;
    let parts = 0;
    let start: number | undefined;
    const send = async () => {
      const ack = await s.send(s.subjects.part, Buffer.from(part.join('')), `${s.sourceId}:snapshot:${id}:${parts}`, header());
      if (ack === undefined) return false;
      start ??= ack.seq;
      parts++;
      part = [];
      size = 0;
      return true;
    };
    const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
    let marker: string | undefined;
    try {
      for await (const text of rl) {
        if (text.startsWith('{"type":"snapshot"')) {
          marker = `${text}\n`;
          break;
        }
        const line = `${text}\n`;
        if (Buffer.byteLength(line) > budget)
          throw (s.tooLarge ?? ((w, n) => tooLarge(w, n, budget)))('a snapshot row', Buffer.byteLength(line));
        if (size + Buffer.byteLength(line) > budget && !(await send())) return undefined;
        part.push(line);
        size += Buffer.byteLength(line);
      }
    } finally {
      rl.close();
    }
    if ((part.length > 0 || parts === 0) && !(await send())) return undefined;
    const h = header();
    h.set(HEADER.snapshotStart, String(start));
    h.set(HEADER.snapshotParts, String(parts));
    if (replacesSeq !== undefined) h.set(HEADER.replacesSeq, String(replacesSeq));
    h.set(HEADER.cursor, snap.cursor);
    const ack = await s.send(s.subjects.end, Buffer.from(marker ?? ''), `${s.sourceId}:snapshot:${id}:end`, h);
    if (ack === undefined) return undefined;
    await s.held(total, start as number);
    return { cursor: snap.cursor, seq: snap.seq, rows: snap.rows, parts, firstSeq: start as number };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The lines of a snapshot as they are written to its file, counted as
 * publishSnapshot packs them into messages (a part holds lines up to the
 * budget; the marker is the end message): its size in the stream, known
 * before anything is sent.
 */
class PartCount implements LineWriter {
  readonly #sink: LineWriter;
  readonly #budget: number;
  #parts = 0;
  #size = 0;
  #bytes = 0;

  constructor(sink: LineWriter, budget: number) {
    this.#sink = sink;
    this.#budget = budget;
  }

  write(obj: unknown): string {
    const line = this.#sink.write(obj);
    const n = Buffer.byteLength(line);
    this.#bytes += n;
    if (!line.startsWith('{"type":"snapshot"')) {
      if (this.#size > 0 && this.#size + n > this.#budget) {
        this.#parts++;
        this.#size = 0;
      }
      this.#size += n;
    }
    return line;
  }

  flush(durable: boolean): void {
    this.#sink.flush(durable);
  }

  size(): SnapshotSize {
    const parts = this.#parts + (this.#size > 0 || this.#parts === 0 ? 1 : 0);
    return { messages: parts + 1, parts, bytes: this.#bytes };
  }
}

/** One line too large for any message. */
export function tooLarge(what: string, bytes: number, budget: number): InvalidInputError {
  return new InvalidInputError(
    'BROKER_MESSAGE_TOO_LARGE',
    `${what} is ${bytes} bytes as a line, more than one NATS message may carry here (${budget} bytes under the server's max_payload). Raise max_payload in the nats-server configuration.`,
  );
}
