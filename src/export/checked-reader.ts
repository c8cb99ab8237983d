import fs from 'node:fs';
import readline from 'node:readline';
import { InvalidInputError } from '../errors.ts';
import { decodeCursor, eventLineSchema, type ChangeBatch, type EventLine } from '../feed/index.ts';
import type { SourceShape } from '../projection/index.ts';
import {
  batchLineSchema,
  exportLineSchema,
  READABLE_FORMAT_VERSIONS,
  rowLineSchema,
  snapshotLineSchema,
  tableLineSchema,
  type ExportLine,
  type BatchLine,
  type RowLine,
  type SnapshotLine,
  type TableLine,
} from './format.ts';
import { isSimpleEventLine, isSimpleRowLine } from './fast-lines.ts';
import { LineDigest } from './line-digest.ts';
import { eventPrefix, eventSeqOf, isRowLineOf, rowPrefix, type LinePrefix } from './held-lines.ts';
import { FileLines, lineText, type RawLine } from './raw-lines.ts';
import { checkRowTypes, integerOutOfRange } from './typed-values.ts';
import { TEXT_ENCODINGS, type Db, type TextEncoding } from '../sqlite/index.ts';

/*
 * Reads an export file and checks what it reads (docs/jsonl.md, "Checks"),
 * before anything is applied: each line's shape, one source, the line
 * format version, typed values, each snapshot and batch against its
 * marker's counts and digest, a snapshot's lines and marker at one seq, and
 * each marker's cursor at the marker's seq and source. A batch is yielded only once its marker has
 * matched; snapshot rows are yielded as they come (a snapshot can be larger
 * than memory) and its marker only once it has matched, so the importer
 * commits a snapshot only after its `snapshot` item. An error names the
 * file and line; the section it is in must not be committed. Lines the
 * target already holds are digested, counted and ordered but not parsed
 * (held-lines.ts): a batch's events at or below ReadOptions.heldThrough are
 * left out of its item, and a snapshot's rows of a table ReadOptions.rowsHeld
 * names are not yielded.
 */

export type ExportItem =
  | { readonly kind: 'table'; readonly n: number; readonly line: TableLine }
  | { readonly kind: 'row'; readonly n: number; readonly line: RowLine }
  | { readonly kind: 'snapshot'; readonly n: number; readonly line: SnapshotLine }
  | {
      readonly kind: 'batch';
      readonly n: number;
      readonly line: BatchLine;
      /** The batch's event lines above ReadOptions.heldThrough (all of them without it). */
      readonly events: readonly { readonly n: number; readonly line: EventLine }[];
      /** A segment's batch (segment-read.ts): its events as a batch of `table` read in SQL, `events` being empty. */
      readonly segment?: (table: string, columns: readonly string[]) => ChangeBatch;
      /**
       * An attached segment's: what an error its batch's apply raised is, when
       * SQLite could not read the segment (its refusal, naming it), or undefined.
       */
      readonly unreadable?: (err: unknown) => Error | undefined;
    };

export interface ReadTotals {
  /** Lines in the file, the unterminated last one included. */
  readonly lines: number;
  /** Lines after the last snapshot or batch marker: read, never yielded. */
  readonly incompleteTail: number;
}

export interface ReadOptions {
  /** The shape of a table the file has no `table` line for (the target's stored one), for the typed-value checks. */
  readonly shapeOf?: (table: string) => SourceShape | undefined;
  /** Before each snapshot or batch it yields: how many bytes of the file have been read so far (for progress). */
  readonly onRead?: (bytes: number) => void;
  /**
   * The seq through which the target holds every event of source
   * `sourceId` (0: none), asked before each batch's lines: its event lines
   * at or below it are checked by their bytes only and left out of the
   * batch's item (held-lines.ts).
   */
  readonly heldThrough?: (sourceId: string) => number;
  /**
   * Whether the target holds the snapshot whose table line was yielded last
   * for `table` (asked once that item is consumed): its row lines are then
   * checked by their bytes only and not yielded.
   */
  readonly rowsHeld?: (table: string) => boolean;
  /** The target's connection, which a segment is attached to (segment-read.ts). */
  readonly target?: Db;
}

/**
 * A segment among the lines (a broker's segment message): its checked items
 * come in its place. `segment` is its file, or, with `data` (a small message
 * held in memory, never written to a file), the name errors give it.
 */
export interface SegmentRef {
  readonly segment: string;
  readonly data?: Uint8Array;
}

/** Lines to check, from a file or any other carrier (a broker's messages). */
export interface LineSource {
  /** The lines, without their newlines (and segments, from a broker's segment subject). */
  readonly lines?: AsyncIterable<string | SegmentRef>;
  /** Or the lines as bytes, each ending with its newline, in groups, each valid until the next is asked for (raw-lines.ts). */
  readonly rawLines?: AsyncIterable<readonly Buffer[]>;
  /** Names line `n` (1-based) in errors: `<file>:<n>`. */
  readonly where: (n: number) => string;
  /** Bytes read so far (for progress). */
  readonly bytesRead?: () => number;
  /**
   * Whether the last line ended with a newline, asked once the lines end.
   * False: it was torn (an export interrupted mid-write), and a last line that
   * does not parse is ignored like any incomplete batch. Absent: lines are
   * never torn (each comes whole, as a broker's message does), so a line that
   * does not parse is refused at once.
   */
  readonly lastLineTerminated?: () => boolean;
  /** The source every line must belong to (default: the first line's). */
  readonly sourceId?: string;
  /**
   * Reads a segment among the lines (SegmentRef): checks it and gives its
   * source and its items, numbered after line `n` (segment-check.ts,
   * segment-read.ts). Needed when the lines carry segments.
   */
  readonly segment?: (ref: SegmentRef, n: number) => { readonly sourceId: string; readonly items: AsyncGenerator<ExportItem, ReadTotals> };
}

/** Reads an export file, checked (readCheckedLines over its lines). */
export async function* readExportFile(file: string, options: ReadOptions = {}): AsyncGenerator<ExportItem, ReadTotals> {
  const input = new FileLines(file);
  return yield* readCheckedLines(
    {
      rawLines: input.groups(),
      where: (n) => `${file}:${n}`,
      bytesRead: () => input.bytesRead,
      lastLineTerminated: () => endsWithNewline(file),
    },
    options,
  );
}

/** The lines of `src` in groups, whichever way it gives them. */
async function* lineGroups(src: LineSource): AsyncGenerator<readonly (RawLine | SegmentRef)[]> {
  if (src.rawLines !== undefined) yield* src.rawLines;
  else if (src.lines !== undefined) for await (const text of src.lines) yield [text];
}

/** Whether a line holds only white space (read, not digested: as readline's text was trimmed). */
function blank(raw: RawLine): boolean {
  if (typeof raw === 'string') return raw.trim() === '';
  return raw[0] === 0x7b ? false : lineText(raw).trim() === ''; // `{`: the first byte of every line that is not blank
}

/** Checks lines of the export format and yields them as items (see the top of this file). */
export async function* readCheckedLines(src: LineSource, options: ReadOptions = {}): AsyncGenerator<ExportItem, ReadTotals> {
  const where = src.where;
  const shapes = new Map<string, SourceShape>();
  const shapeOf = (t: string) => shapes.get(t) ?? options.shapeOf?.(t);
  const digest = new LineDigest();
  let sourceId: string | undefined = src.sourceId;
  let encoding: string | undefined;
  /** Row counts of the snapshot being read (undefined: not in a snapshot). */
  let snapshotRows: Map<string, number> | undefined;
  /** The seq of the snapshot being read: its first table line's, which its other lines and its marker must carry. */
  let snapshotSeq = 0;
  /** The batch's events read so far; a held one without its line. */
  let events: ReadEvent[] = [];
  const heldTable = new Map<LinePrefix, string>();
  let n = 0;
  let tailStart = 0;
  /** The snapshot's tables the target holds: their row lines' first bytes. */
  let heldRows: LinePrefix[] = [];
  /** Events at or below this seq are held (asked before each batch); undefined: not asked yet for this batch. */
  let held: { readonly through: number; readonly prefix: LinePrefix } | undefined;
  const addDigest = (raw: RawLine) => (typeof raw === 'string' ? digest.add(raw) : digest.addBytes(raw));
  const bytes = () => src.bytesRead?.() ?? 0;
  // A line that does not parse is reported only once we know it is not the
  // input's last, unterminated line: that is a truncated tail (an export
  // interrupted mid-write), which is ignored like any incomplete batch.
  let malformed: unknown;
  for await (const group of lineGroups(src))
    for (const raw of group) {
      if (malformed !== undefined) throw malformed;
      if (typeof raw !== 'string' && !Buffer.isBuffer(raw)) {
        // A segment (segment-check.ts, segment-read.ts): checked whole, then its items, between batches and snapshots.
        if (snapshotRows !== undefined || events.length > 0) throw refused(where(n + 1), 'a segment inside a snapshot or a batch');
        if (src.segment === undefined) throw refused(where(n + 1), 'a segment where only lines are read');
        const seg = src.segment(raw, n);
        if (sourceId !== undefined && seg.sourceId !== sourceId) {
          await seg.items.return({ lines: 0, incompleteTail: 0 }); // (a segment held in memory: its connection closed)
          throw new InvalidInputError(
            'IMPORT_MIXED_SOURCES',
            `${where(n + 1)}: segment ${raw.segment} is of source ${seg.sourceId}, but this stream carries source ${sourceId}; nothing of it was committed.`,
          );
        }
        sourceId = seg.sourceId;
        n += (yield* seg.items).lines;
        tailStart = n;
        held = undefined;
        continue;
      }
      n++;
      if (blank(raw)) continue;
      if (sourceId !== undefined) {
        if (snapshotRows !== undefined) {
          const p = heldRows.find((x) => isRowLineOf(raw, x));
          if (p !== undefined) {
            // A row of a snapshot the target holds: counted and digested, not parsed.
            const table = heldTable.get(p) as string;
            snapshotRows.set(table, (snapshotRows.get(table) as number) + 1);
            addDigest(raw);
            continue;
          }
        } else if (options.heldThrough !== undefined) {
          held ??= { through: options.heldThrough(sourceId), prefix: eventPrefix(sourceId) };
          const seq = held.through > 0 ? eventSeqOf(raw, held.prefix) : undefined;
          if (seq !== undefined && seq <= held.through) {
            // An event the target holds: digested, its seq ordered with the batch's, not parsed.
            addDigest(raw);
            events.push({ n, seq });
            continue;
          }
        }
      }
      const text = lineText(raw);
      let line: ReturnType<typeof parseLine>;
      try {
        line = parseLine(text, where(n), shapeOf);
      } catch (err) {
        if (src.lastLineTerminated === undefined) throw err;
        malformed = err;
        continue;
      }
      if (sourceId !== undefined && line.sourceId !== sourceId) {
        throw new InvalidInputError(
          'IMPORT_MIXED_SOURCES',
          `${where(n)}: line belongs to source ${line.sourceId}, but ${src.sourceId === undefined ? 'the file started with' : 'this stream carries source'} ${sourceId}. One file must hold one source's stream; nothing of this line's batch or snapshot was committed.`,
        );
      }
      sourceId = line.sourceId;
      if ('encoding' in line) {
        if (encoding !== undefined && line.encoding !== encoding)
          throw refused(where(n), `a ${line.type} line of a ${line.encoding} source, but the file started with ${encoding}`);
        encoding = line.encoding;
      }
      if (!('type' in line)) {
        if (snapshotRows !== undefined) throw refused(where(n), 'an event line inside a snapshot (before its `snapshot` line)');
        const shape = shapeOf(line.table);
        if (shape !== undefined) {
          for (const image of [line.before, line.after]) if (image !== null) checkRowTypes(shape, image, where(n));
        }
        addDigest(raw);
        events.push({ n, seq: line.seq, line });
        continue;
      }
      if (line.type === 'table') {
        if (events.length > 0) throw refused(where(n), `a table line after ${events.length} event lines that no batch line ended`);
        if (snapshotRows === undefined) {
          snapshotRows = new Map();
          snapshotSeq = line.seq;
          heldRows = [];
          heldTable.clear();
          digest.take();
        }
        if (line.seq !== snapshotSeq)
          throw refused(
            where(n),
            `a table line of ${line.table} at seq ${line.seq} in a snapshot whose first table line is at seq ${snapshotSeq}`,
          );
        if (snapshotRows.has(line.table)) throw refused(where(n), `a second table line for ${line.table} in one snapshot`);
        snapshotRows.set(line.table, 0);
        shapes.set(line.table, {
          table: line.table,
          columns: line.columns,
          keyColumns: line.keyColumns,
          withoutRowid: line.withoutRowid,
          rowidAlias: line.rowidAlias,
        });
        addDigest(raw);
        yield { kind: 'table', n, line };
        if (options.rowsHeld?.(line.table) === true) {
          const p = rowPrefix(line.sourceId, line.seq, line.table);
          heldRows.push(p);
          heldTable.set(p, line.table);
        }
      } else if (line.type === 'row') {
        const count = snapshotRows?.get(line.table);
        if (snapshotRows === undefined || count === undefined)
          throw refused(where(n), `a row of table ${line.table} outside a snapshot of it (no table line before it)`);
        if (line.seq !== snapshotSeq)
          throw refused(
            where(n),
            `a row line of ${line.table} at seq ${line.seq} in a snapshot whose table lines are at seq ${snapshotSeq}`,
          );
        checkRowTypes(shapes.get(line.table) as SourceShape, line.row, where(n));
        snapshotRows.set(line.table, count + 1);
        addDigest(raw);
        yield { kind: 'row', n, line };
      } else if (line.type === 'snapshot') {
        checkMarkerCursor(line, where(n));
        if (snapshotRows !== undefined && line.seq !== snapshotSeq)
          throw refused(
            where(n),
            `a snapshot line at seq ${line.seq} ending a snapshot whose table and row lines are at seq ${snapshotSeq}`,
          );
        checkSnapshot(line, snapshotRows ?? new Map(), digest.take(), where(n));
        snapshotRows = undefined;
        held = undefined;
        tailStart = n;
        options.onRead?.(bytes());
        yield { kind: 'snapshot', n, line };
      } else {
        if (snapshotRows !== undefined) throw refused(where(n), 'a batch line inside a snapshot (before its `snapshot` line)');
        checkMarkerCursor(line, where(n));
        checkBatch(line, events, digest.take(), where(n));
        const batch = events.filter((e): e is ParsedEvent => e.line !== undefined);
        events = [];
        held = undefined;
        tailStart = n;
        options.onRead?.(bytes());
        yield { kind: 'batch', n, line, events: batch };
      }
    }
  if (malformed !== undefined && (src.lastLineTerminated?.() ?? true)) throw malformed;
  return { lines: n, incompleteTail: n - tailStart };
}

/** The text encoding the file's first marker declares (undefined: no marker, or not an export line). */
export async function peekEncoding(file: string): Promise<TextEncoding | undefined> {
  const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  try {
    for await (const text of rl) {
      if (!text.startsWith('{"type":"')) continue; // event and row lines come before any marker they belong to
      try {
        const e = (JSON.parse(text) as { encoding?: unknown }).encoding;
        return (TEXT_ENCODINGS as readonly unknown[]).includes(e) ? (e as TextEncoding) : undefined;
      } catch {
        return undefined; // the reader reports the line
      }
    }
    return undefined;
  } finally {
    rl.close();
  }
}

/**
 * The cursor of the last `batch` or `snapshot` line of an export file, read
 * from its end (lines after it, a torn tail, are passed over), or undefined
 * when none is found. A hint of how far the file reaches
 * (ItemStream.lastCursor), read before the file is: nothing is applied on
 * its word, the reader checks every marker it applies.
 */
export function lastMarkerCursor(file: string): string | undefined {
  const fd = fs.openSync(file, 'r');
  try {
    const chunk = 64 * 1024;
    let end = fs.fstatSync(fd).size;
    // The bytes of the line the previous (later) chunk began inside, not yet whole.
    let carry = Buffer.alloc(0);
    while (end > 0) {
      const start = Math.max(0, end - chunk);
      const buf = Buffer.alloc(end - start);
      fs.readSync(fd, buf, 0, buf.length, start);
      const data = carry.length === 0 ? buf : Buffer.concat([buf, carry]);
      let lineEnd = data.length;
      for (let i = data.length - 1; i >= 0; i--) {
        if (data[i] !== 0x0a && data[i] !== 0x0d) continue;
        const found = markerCursor(data.subarray(i + 1, lineEnd));
        if (found !== undefined) return found;
        lineEnd = i;
      }
      carry = Buffer.from(data.subarray(0, lineEnd));
      end = start;
    }
    return markerCursor(carry);
  } finally {
    fs.closeSync(fd);
  }
}

/** The cursor of a `batch` or `snapshot` line (undefined: the line is not one). */
function markerCursor(line: Buffer): string | undefined {
  const text = line.toString('utf8');
  if (!text.startsWith('{"type":"batch"') && !text.startsWith('{"type":"snapshot"')) return undefined;
  try {
    const json: unknown = JSON.parse(text);
    const r = text.startsWith('{"type":"batch"') ? batchLineSchema.safeParse(json) : snapshotLineSchema.safeParse(json);
    return r.success ? r.data.cursor : undefined;
  } catch {
    return undefined;
  }
}

function refused(at: string, what: string): InvalidInputError {
  return new InvalidInputError(
    'IMPORT_OUT_OF_ORDER',
    `${at}: ${what}. Lines of an export file were moved, lost or edited; nothing of this batch or snapshot was committed. Export again, or import the file sluice wrote.`,
  );
}

/**
 * A marker's cursor must name the marker's own source and seq: the importer
 * records the cursor as where the target stands, so a cursor moved forward
 * would skip the batches between.
 */
function checkMarkerCursor(line: SnapshotLine | BatchLine, at: string): void {
  let c: ReturnType<typeof decodeCursor>;
  try {
    c = decodeCursor(line.cursor);
  } catch (err) {
    throw new InvalidInputError(
      'IMPORT_MALFORMED_LINE',
      `${at}: a ${line.type} line whose cursor is not a sluice cursor (${err instanceof Error ? err.message : String(err)}). The import stopped here; nothing of this ${line.type} was committed. Export again, or import the file sluice wrote.`,
    );
  }
  if (c.seq !== line.seq || c.sourceId !== line.sourceId)
    throw refused(
      at,
      `a ${line.type} line at seq ${line.seq} of source ${line.sourceId} whose cursor is at seq ${c.seq} of source ${c.sourceId}`,
    );
}

function checkSnapshot(line: SnapshotLine, rows: ReadonlyMap<string, number>, digest: string, at: string): void {
  const fail = (why: string) =>
    new InvalidInputError(
      'IMPORT_SNAPSHOT_MISMATCH',
      `${at}: the snapshot ending here ${why}. Its lines were lost, added, edited or moved; nothing of it was committed. Export again (delete the file and its .cursor), or import the file sluice wrote.`,
    );
  const listed = [...line.tables].sort();
  const read = [...rows.keys()].sort();
  if (listed.join('\0') !== read.join('\0'))
    throw fail(`lists tables ${JSON.stringify(listed)}, but table lines were read for ${JSON.stringify(read)}`);
  for (const t of line.tables) {
    const want = line.rows[t];
    if (want !== rows.get(t)) throw fail(`says table ${t} has ${want ?? 'no'} rows, but ${rows.get(t)} row lines were read`);
  }
  if (digest !== line.digest) throw fail(`has digest ${line.digest}, but its lines digest to ${digest}`);
}

interface ReadEvent {
  readonly n: number;
  readonly seq: number;
  readonly line?: EventLine;
}
type ParsedEvent = ReadEvent & { readonly line: EventLine };

function checkBatch(line: BatchLine, events: readonly ReadEvent[], digest: string, at: string): void {
  const fail = (why: string) =>
    new InvalidInputError(
      'IMPORT_BATCH_MISMATCH',
      `${at}: the batch ending here (seq ${line.fromSeq}-${line.seq}) ${why}. Its lines were lost, added, edited or moved; nothing of it was committed. Export again, or import the file sluice wrote.`,
    );
  if (events.length !== line.count) throw fail(`says it has ${line.count} events, but ${events.length} event lines were read`);
  if (digest !== line.digest) throw fail(`has digest ${line.digest}, but its lines digest to ${digest}`);
  let prev = line.fromSeq;
  for (const e of events) {
    if (e.seq <= prev || e.seq > line.seq)
      throw fail(`holds the event at line ${e.n} with seq ${e.seq}, out of order or outside (${line.fromSeq}, ${line.seq}]`);
    prev = e.seq;
  }
}

function endsWithNewline(file: string): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    if (size === 0) return true;
    const last = Buffer.alloc(1);
    fs.readSync(fd, last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    fs.closeSync(fd);
  }
}

const lineSchemas = new Map<unknown, { safeParse(json: unknown): { success: true; data: ExportLine } | { success: false } }>([
  ['table', tableLineSchema],
  ['row', rowLineSchema],
  ['snapshot', snapshotLineSchema],
  ['batch', batchLineSchema],
  [undefined, eventLineSchema],
]);

function parseLine(
  text: string,
  at: string,
  shapeOf: (table: string) => SourceShape | undefined,
): ReturnType<typeof exportLineSchema.parse> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new InvalidInputError(
      'IMPORT_MALFORMED_LINE',
      `${at}: not JSON. The import stopped here; the batch this line belongs to was not committed. Fix or truncate the file at this line.`,
    );
  }
  const marker = json as { type?: unknown; v?: unknown } | null;
  if (
    marker !== null &&
    typeof marker === 'object' &&
    ['table', 'snapshot', 'batch'].includes(marker.type as string) &&
    !READABLE_FORMAT_VERSIONS.includes(marker.v as number)
  ) {
    const v = marker.v === undefined ? 1 : JSON.stringify(marker.v);
    throw new InvalidInputError(
      'IMPORT_FORMAT_VERSION',
      `${at}: a ${String(marker.type)} line of export format ${v}; this sluice reads formats ${READABLE_FORMAT_VERSIONS.join(' and ')} (markers with counts and digests). Export the source again with this sluice (delete the file and its .cursor first).`,
    );
  }
  // The common event and row lines are checked by hand (fast-lines.ts).
  // Others get the line's own schema, found by its `type` (none: an event line). A line
  // only ever matches the member of the union its type names, so this
  // accepts and returns exactly what the union does, without trying (and
  // failing) four schemas on every event line; a line it refuses goes
  // through the union, for the same message.
  if (isSimpleEventLine(json)) return json as EventLine;
  if (isSimpleRowLine(json)) return json as RowLine;
  const own = typeof marker === 'object' && marker !== null ? lineSchemas.get(marker.type) : undefined;
  const fast = own?.safeParse(json);
  if (fast?.success === true) return fast.data;
  const r = exportLineSchema.safeParse(json);
  if (!r.success) {
    // An integer too wide for SQLite is a bad value of a column, said as such (the union's message would not name it).
    throw (
      integerOutOfRange(json, at, shapeOf) ??
      new InvalidInputError(
        'IMPORT_MALFORMED_LINE',
        `${at}: not a sluice export line (${r.error.issues[0]?.message ?? 'bad shape'}). The import stopped here; the batch this line belongs to was not committed.`,
      )
    );
  }
  return r.data;
}
