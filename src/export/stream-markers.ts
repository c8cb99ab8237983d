import fs from 'node:fs';
import { InvalidInputError } from '../errors.ts';
import { batchLineSchema, snapshotLineSchema } from './format.ts';
import type { CheckedSegment } from './segment-check.ts';

/*
 * The markers of an export file or a folder of segments, in their order,
 * read before anything of it is applied (docs/jsonl.md, "Which file wins"):
 * one file or folder holds one history of its source, whose seqs only go
 * forward, so a snapshot below a marker before it is refused
 * (refuseGoingBack); and a target past the stream's snapshot is continued
 * by the stream only through a batch that ends exactly at its seq
 * (batchReaching, Importer #pastSnapshot).
 *
 * A hint for these two rules: what is applied is checked as it is read
 * (checked-reader.ts, segment-check.ts), so a marker line that does not
 * parse here is passed over.
 */

export interface StreamMarker {
  readonly type: 'snapshot' | 'batch';
  /** The seq the marker ends at (a snapshot's own seq). */
  readonly seq: number;
  /** A batch's: the seq it goes on from. */
  readonly fromSeq?: number;
  readonly cursor: string;
  /** Names it in errors: `<file>:<line>`, or the segment. */
  readonly at: string;
}

const NL = 0x0a;
const PATTERNS = [Buffer.from('{"type":"snapshot"'), Buffer.from('{"type":"batch"')] as const;
/** The same, each after the newline that ends the line before. */
const AFTER_NL = PATTERNS.map((p) => Buffer.concat([Buffer.of(NL), p]));

/**
 * The `snapshot` and `batch` lines of a JSONL export file, in file order.
 * Only the marker lines are parsed: the rest is searched through for their
 * first bytes (a line starting `{"type":"snapshot"` or `{"type":"batch"`,
 * which the exporter always writes so).
 */
export function fileMarkers(file: string): StreamMarker[] {
  const out: StreamMarker[] = [];
  const fd = fs.openSync(file, 'r');
  try {
    const size = 1 << 20;
    let carry = Buffer.alloc(0);
    let line = 1; // the number of the first line of `data`
    let pos = 0;
    for (;;) {
      const buf = Buffer.alloc(size);
      const got = fs.readSync(fd, buf, 0, size, pos);
      pos += got;
      const data = carry.length === 0 ? buf.subarray(0, got) : Buffer.concat([carry, buf.subarray(0, got)]);
      // Whole lines only, but at the end of the file.
      const end = got === 0 ? data.length : data.lastIndexOf(NL) + 1;
      let start = 0;
      while (start < end) {
        const nl = data.indexOf(NL, start);
        const stop = nl < 0 || nl >= end ? end : nl;
        if (data[start] === 0x7b && PATTERNS.some((p) => data.subarray(start, start + p.length).equals(p))) {
          const marker = markerOf(data.subarray(start, stop).toString('utf8').trimEnd(), `${file}:${line + countLines(data, 0, start)}`);
          if (marker !== undefined) out.push(marker);
        }
        // The next line that starts as a marker: found by native searches, not line by line.
        start = nextMarker(data, stop + 1, end);
      }
      line += countLines(data, 0, end);
      carry = Buffer.from(data.subarray(end));
      if (got === 0) break;
    }
  } finally {
    fs.closeSync(fd);
  }
  return out;
}

/** Where the next line starting as a marker begins in `data` at or after `from`, else `end`. */
function nextMarker(data: Buffer, from: number, end: number): number {
  if (from >= end) return end;
  if (data[from] === 0x7b && PATTERNS.some((p) => data.subarray(from, from + p.length).equals(p))) return from;
  let best = end;
  for (const p of AFTER_NL) {
    const at = data.indexOf(p, from - 1);
    if (at >= 0 && at + 1 < best) best = at + 1;
  }
  return best;
}

function countLines(data: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = data.indexOf(NL, from); i >= 0 && i < to; i = data.indexOf(NL, i + 1)) n++;
  return n;
}

function markerOf(text: string, at: string): StreamMarker | undefined {
  try {
    const json: unknown = JSON.parse(text);
    if (text.startsWith('{"type":"batch"')) {
      const r = batchLineSchema.safeParse(json);
      return r.success ? { type: 'batch', seq: r.data.seq, fromSeq: r.data.fromSeq, cursor: r.data.cursor, at } : undefined;
    }
    const r = snapshotLineSchema.safeParse(json);
    return r.success ? { type: 'snapshot', seq: r.data.seq, cursor: r.data.cursor, at } : undefined;
  } catch {
    return undefined;
  }
}

/** The markers of a folder's segments, checked, in name (seq) order: each one's snapshot, then its batches. */
export function segmentMarkers(segments: readonly CheckedSegment[]): StreamMarker[] {
  const out: StreamMarker[] = [];
  for (const s of segments) {
    const snap = s.meta.snapshot;
    if (snap !== undefined) out.push({ type: 'snapshot', seq: snap.seq, cursor: snap.cursor, at: s.file });
    for (const b of s.batches) out.push({ type: 'batch', seq: b.toSeq, fromSeq: b.fromSeq, cursor: b.cursor, at: s.file });
  }
  return out;
}

/**
 * Refuses a stream whose snapshot lies below a marker before it: a source's
 * seqs only go forward in one history, so the file or folder holds two (an
 * export appended to one whose `.cursor` was deleted, after its source was
 * restored from an older copy), and which one its rows would end in is no
 * rule. Before anything is applied (IMPORT_OUT_OF_ORDER).
 */
export function refuseGoingBack(markers: readonly StreamMarker[], label: string): void {
  let reached: StreamMarker | undefined;
  for (const m of markers) {
    if (m.type === 'snapshot' && reached !== undefined && m.seq < reached.seq)
      throw new InvalidInputError(
        'IMPORT_OUT_OF_ORDER',
        `${m.at}: a snapshot at seq ${m.seq} after a ${reached.type} at seq ${reached.seq} (${reached.at}): the seqs of one history only go forward, so ${label} holds two histories of its source (an export appended to a file or folder whose .cursor was deleted, after its source was restored from an older copy), and it cannot be told which one a target should keep; nothing was imported. Export the source again to a new --out, and import that.`,
      );
    if (reached === undefined || m.seq > reached.seq) reached = m;
  }
}

/**
 * The cursor of the first batch after the stream's last snapshot at seq
 * `after` that ends at or past seq `seq` (undefined: none, or no such
 * snapshot).
 */
export function batchReaching(markers: readonly StreamMarker[], after: number, seq: number): string | undefined {
  let from = -1;
  markers.forEach((m, i) => {
    if (m.type === 'snapshot' && m.seq === after) from = i;
  });
  if (from < 0) return undefined;
  return markers.slice(from + 1).find((m) => m.type === 'batch' && m.seq >= seq)?.cursor;
}
