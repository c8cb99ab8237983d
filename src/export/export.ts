import fs from 'node:fs';
import type { Db } from '../sqlite/index.ts';
import { setOwn, toJsonValue, describeTable, foldIdent, shellWord, textEncoding } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { snapshot, readBatch, type BatchOptions, decodeCursor, eventToLine } from '../feed/index.ts';
import { sourceShape } from '../projection/index.ts';
import { highWaterMark, readState } from '../capture/index.ts';
import { FORMAT_VERSION, type BatchLine, type RowLine, type SnapshotLine, type TableLine } from './format.ts';
import { LineDigest } from './line-digest.ts';

export interface ExportOptions {
  /** Continue after this cursor instead of starting with a snapshot. */
  readonly since?: string;
  /** Tables to export (default: every captured images/keys table). */
  readonly tables?: readonly string[];
  /** Events per batch (one `batch` line each). Default 1000. */
  readonly batchSize?: number;
}

export interface ExportResult {
  readonly cursor: string;
  readonly rows: number;
  readonly events: number;
  readonly batches: number;
}

/** Buffered line writer on a file descriptor, with an explicit durable flush. */
export class LineSink implements LineWriter {
  readonly #fd: number;
  #buf: string[] = [];
  #size = 0;
  constructor(fd: number) {
    this.#fd = fd;
  }
  /** Queues one line; returns its text (with the newline), which digests cover. */
  write(obj: unknown): string {
    const line = `${JSON.stringify(obj)}\n`;
    this.#buf.push(line);
    this.#size += line.length;
    if (this.#size > 1 << 20) this.flush(false);
    return line;
  }
  flush(durable: boolean): void {
    if (this.#buf.length > 0) {
      const data = Buffer.from(this.#buf.join(''));
      let off = 0;
      while (off < data.length) off += fs.writeSync(this.#fd, data, off);
      this.#buf = [];
      this.#size = 0;
    }
    if (durable) {
      try {
        fs.fsyncSync(this.#fd);
      } catch {
        /* pipes and terminals cannot be synced */
      }
    }
  }
}

/** Where export lines go: a file (LineSink), or a broker message being built. */
export interface LineWriter {
  /** Queues one line; returns its text (with the newline), which digests cover. */
  write(obj: unknown): string;
  /** Makes what was written so far durable (a file's fsync). */
  flush(durable: boolean): void;
}

/**
 * Writes a snapshot (unless `since` is given) and then every retained event
 * after it, in batches, to `sink`. `onDurable` runs after each batch is on
 * disk with the cursor to resume from: the caller records it (export is
 * at-least-once: a crash before that record repeats the batch, never loses it).
 */
export function exportOnce(db: Db, sink: LineWriter, options: ExportOptions, onDurable: (cursor: string) => void): ExportResult {
  if (options.since !== undefined) checkResumedTables(options.since, options.tables, 'the cursor it resumes from');
  let cursor = options.since;
  let rows = 0;
  if (cursor === undefined) {
    const snap = writeSnapshot(db, sink, options.tables);
    sink.flush(true);
    cursor = snap.cursor;
    rows = snap.rows;
    onDurable(cursor);
  }
  let events = 0;
  let batches = 0;
  for (;;) {
    const b = writeBatch(db, sink, cursor, { limit: options.batchSize ?? 1000 });
    if (b === undefined) break;
    sink.flush(true);
    events += b.events;
    batches++;
    cursor = b.cursor;
    onDurable(cursor);
    if (!b.hasMore) break;
  }
  return { cursor, rows, events, batches };
}

/**
 * A resumed export (one given a cursor to continue after) writes no snapshot
 * and reads the batches of its cursor's tables, whatever `tables` says: a
 * `tables` set other than the cursor's would be ignored without a word (a
 * table added would never be exported). Refused instead, before anything is
 * written, naming both sets; `from` says where the cursor came from. No
 * `tables` (or an empty list): the cursor's, as always.
 */
export function checkResumedTables(since: string, tables: readonly string[] | undefined, from: string): void {
  if (tables === undefined || tables.length === 0) return;
  const carried = decodeCursor(since).tables;
  const fold = (names: readonly string[]) => new Set(names.map(foldIdent));
  const have = fold(carried);
  const want = fold(tables);
  if (have.size === want.size && [...want].every((t) => have.has(t))) return;
  const list = (names: readonly string[]) => [...new Set(names)].join(', ');
  const flags = (names: readonly string[]) => [...new Set(names)].map((t) => `--table ${shellWord(t)}`).join(' ');
  const added = tables.filter((t) => !have.has(foldIdent(t)));
  const left = carried.filter((t) => !want.has(foldIdent(t)));
  const change = [
    ...(added.length > 0 ? [`${list(added)} would not be exported`] : []),
    ...(left.length > 0 ? [`${list(left)} would still be exported`] : []),
  ].join(', and ');
  throw new InvalidInputError(
    'EXPORT_TABLES_CHANGED',
    `${flags(tables)} is not the set of tables ${from} carries (${list(carried)}): a resumed export goes on with its cursor's tables and writes no snapshot, so ${change}. Export to a new --out (it starts with a snapshot of the tables you name), or resume with ${flags(carried)} (or no --table).`,
  );
}

/** Writes a snapshot of `tables` (default: every captured images/keys table): its table and row lines, then its marker. */
export function writeSnapshot(
  db: Db,
  sink: LineWriter,
  tables: readonly string[] | undefined,
): { readonly cursor: string; readonly seq: number; readonly rows: number } {
  let rows = 0;
  const digest = new LineDigest();
  const encoding = textEncoding(db);
  let sourceId = '';
  let seq = 0;
  const counts: Record<string, number> = {};
  const snap = snapshot(db, tables, {
    onTable: (t) => {
      const info = describeTable(db, t.name);
      if (info === undefined) throw new InvalidInputError('TABLE_NOT_FOUND', `Table ${t.name} vanished during export.`);
      // Its captured columns only: the header names no column left out of capture.
      const shape = sourceShape(info, t.excluded);
      sourceId = readState(db)?.sourceId ?? '';
      seq = highWaterMark(db);
      const line: TableLine = {
        type: 'table',
        v: FORMAT_VERSION,
        encoding,
        sourceId,
        seq,
        table: t.name,
        columns: [...shape.columns],
        keyColumns: [...shape.keyColumns],
        withoutRowid: shape.withoutRowid,
        rowidAlias: shape.rowidAlias,
      };
      digest.add(sink.write(line));
      setOwn(counts, t.name, 0);
    },
    onRow: (t, values) => {
      const row: Record<string, ReturnType<typeof toJsonValue>> = {};
      t.columns.forEach((c, i) => setOwn(row, c, toJsonValue(values[i] ?? null)));
      const line: RowLine = { type: 'row', sourceId, seq, table: t.name, row };
      digest.add(sink.write(line));
      setOwn(counts, t.name, (counts[t.name] ?? 0) + 1);
      rows++;
    },
  });
  const end: SnapshotLine = {
    type: 'snapshot',
    v: FORMAT_VERSION,
    encoding,
    sourceId: decodeCursor(snap.cursor).sourceId,
    seq: snap.seq,
    cursor: snap.cursor,
    tables: snap.tables.map((t) => t.name),
    rows: counts,
    digest: digest.take(),
  };
  sink.write(end);
  return { cursor: snap.cursor, seq: snap.seq, rows };
}

export interface WrittenBatch {
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly sourceId: string;
  /** The cursor to continue from. */
  readonly cursor: string;
  readonly events: number;
  /** The batch limit (or throughSeq) cut it short of the high-water mark. */
  readonly hasMore: boolean;
}

/** Writes the next batch after `cursor` (its event lines, then its marker); undefined when there is none. */
export function writeBatch(db: Db, sink: LineWriter, cursor: string, options: BatchOptions): WrittenBatch | undefined {
  const b = readBatch(db, cursor, options);
  if (b.toSeq === b.fromSeq) return undefined;
  const digest = new LineDigest();
  for (const e of b.events) digest.add(sink.write(eventToLine(b.sourceId, e)));
  const marker: BatchLine = {
    type: 'batch',
    v: FORMAT_VERSION,
    encoding: textEncoding(db),
    sourceId: b.sourceId,
    seq: b.toSeq,
    fromSeq: b.fromSeq,
    cursor: b.to,
    count: b.events.length,
    digest: digest.take(),
  };
  sink.write(marker);
  return { fromSeq: b.fromSeq, toSeq: b.toSeq, sourceId: b.sourceId, cursor: b.to, events: b.events.length, hasMore: b.hasMore };
}
