import fs from 'node:fs';
import { decodeCursor, encodeCursor } from '../feed/index.ts';
import { InvalidInputError } from '../errors.ts';

/*
 * Where an interrupted export resumes (docs/jsonl.md, "Crashes"). The cursor
 * file beside an export file holds, atomically replaced after each batch is
 * on disk, the cursor of its last complete batch with the byte offset where
 * that batch ends (the cursor's `ext.exportOffset`). A resumed export first
 * truncates the file to that offset: whatever a killed run wrote after it
 * (a torn line, part of a batch, a whole batch whose cursor was not saved)
 * is removed, and the run writes it again. Before a snapshot the file holds
 * `START <offset>` instead: the offset where the snapshot begins.
 */

const START = 'START ';
const OFFSET_KEY = 'exportOffset';

export interface ResumePoint {
  /** The cursor to continue after (absent: start with a snapshot). */
  readonly cursor?: string;
  /** Bytes of the export file that are complete; anything after is cut. */
  readonly offset?: number;
}

/** The cursor file kept beside an export file. */
export function cursorFileFor(out: string): string {
  return `${out}.cursor`;
}

export function readResumePoint(file: string): ResumePoint {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch {
    return {};
  }
  if (text === '') return {};
  if (text.startsWith(START)) {
    const offset = Number(text.slice(START.length));
    if (!Number.isSafeInteger(offset) || offset < 0)
      throw new InvalidInputError(
        'EXPORT_CURSOR_FILE',
        `Cursor file ${file} holds "${text}", which is not a sluice export position. Delete it (and the export file) to export again from a snapshot.`,
      );
    return { offset };
  }
  return { cursor: text, ...offsetPart(text) };
}

function offsetPart(cursor: string): { offset?: number } {
  const v = decodeCursor(cursor).ext?.[OFFSET_KEY];
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? { offset: v } : {};
}

/** The cursor without its export offset: the position alone, as batch lines and summaries carry it. */
export function positionOf(cursor: string): string {
  const c = decodeCursor(cursor);
  if (c.ext === undefined || !(OFFSET_KEY in c.ext)) return cursor;
  const { [OFFSET_KEY]: _drop, ...rest } = c.ext;
  const { ext: _ext, ...plain } = c;
  return encodeCursor(Object.keys(rest).length === 0 ? plain : { ...plain, ext: rest });
}

/** Records that the export file is complete up to `offset`, `cursor` being its last batch (or snapshot). */
export function saveResumePoint(file: string, cursor: string, offset: number): void {
  const c = decodeCursor(cursor);
  replaceFile(file, encodeCursor({ ...c, ext: { ...c.ext, [OFFSET_KEY]: offset } }));
}

/** Records that a snapshot starts at `offset` (nothing after it is complete yet). */
export function saveSnapshotStart(file: string, offset: number): void {
  replaceFile(file, `${START}${offset}`);
}

/**
 * Cuts the export file back to its last complete point. Without a recorded
 * offset (a cursor file of an older sluice, or --since) only a torn last
 * line is cut. A file shorter than its recorded offset is not this cursor
 * file's export: refused, nothing written; so is one whose recorded offset
 * does not end a line, or ends a line that is not the marker of the saved
 * cursor (checkResumeEnd).
 */
export function truncateToResumePoint(out: string, point: ResumePoint): void {
  if (!fs.existsSync(out)) {
    if (point.offset !== undefined && point.offset > 0) throw shorter(out, 0, point.offset);
    return;
  }
  const size = fs.statSync(out).size;
  if (point.offset !== undefined) {
    if (size < point.offset) throw shorter(out, size, point.offset);
    checkResumeEnd(out, point.cursor, point.offset);
    if (size > point.offset) fs.truncateSync(out, point.offset);
    return;
  }
  const end = lastNewlineEnd(out, size);
  if (end < size) fs.truncateSync(out, end);
}

function shorter(out: string, size: number, offset: number): InvalidInputError {
  return new InvalidInputError(
    'EXPORT_FILE_SHORTER',
    `Export file ${out} has ${size} bytes, but its cursor file ${cursorFileFor(out)} says ${offset} were complete: the file was cut or replaced. Delete the cursor file to start again with a snapshot, or restore the file.`,
  );
}

/** The longest line read back from a resume offset: a marker line is far shorter (a snapshot's names its tables and their row counts). */
const MAX_MARKER_BYTES = 4 << 20;

/**
 * Whether the export file at `out` is the one its cursor file describes, up
 * to `offset` (before any byte of it is cut): the offset ends a line, and,
 * for a cursor (not a snapshot's START), that line is the batch or snapshot
 * marker of the cursor's seq and source. Another export of the same source
 * put in its place (a newer copy moved over it, the old FILE.cursor kept)
 * was cut mid-line there, the events after the offset lost and new ones
 * appended after half a line: no import could read it again. Refused
 * instead (EXPORT_FILE_MISMATCH), nothing written.
 */
function checkResumeEnd(out: string, cursor: string | undefined, offset: number): void {
  if (offset === 0) return;
  const line = lineEndingAt(out, offset);
  if (line === undefined)
    throw mismatch(out, `its byte ${offset}, where that cursor file says its complete part ends, is in the middle of a line`);
  if (cursor === undefined) return;
  const want = decodeCursor(cursor);
  const at = `the line that ends at its byte ${offset}, where that cursor file says its complete part ends,`;
  const marker = markerOf(line);
  if (marker === undefined)
    throw mismatch(out, `${at} is not the batch or snapshot line of that cursor (seq ${want.seq} of source ${want.sourceId})`);
  if (marker.seq !== want.seq || marker.sourceId !== want.sourceId)
    throw mismatch(
      out,
      `${at} is the ${marker.type} line of seq ${marker.seq} of source ${marker.sourceId}, not that cursor's (seq ${want.seq} of source ${want.sourceId})`,
    );
}

/** The seq and source of a batch or snapshot line, by its cursor; undefined for any other line. */
function markerOf(line: string): { type: string; seq: number; sourceId: string } | undefined {
  try {
    const v = JSON.parse(line) as { type?: unknown; cursor?: unknown };
    if ((v.type !== 'batch' && v.type !== 'snapshot') || typeof v.cursor !== 'string') return undefined;
    const c = decodeCursor(v.cursor);
    return { type: v.type, seq: c.seq, sourceId: c.sourceId };
  } catch {
    return undefined;
  }
}

/** The text of the line that ends (with its newline) just before `offset`; undefined when the byte before it is no newline. A line longer than MAX_MARKER_BYTES: its last part. */
function lineEndingAt(file: string, offset: number): string | undefined {
  const fd = fs.openSync(file, 'r');
  try {
    const last = Buffer.alloc(1);
    if (fs.readSync(fd, last, 0, 1, offset - 1) !== 1 || last[0] !== 0x0a) return undefined;
    const end = offset - 1;
    const start = Math.max(0, end - MAX_MARKER_BYTES);
    const buf = Buffer.alloc(end - start);
    let n = 0;
    while (n < buf.length) {
      const r = fs.readSync(fd, buf, n, buf.length - n, start + n);
      if (r === 0) break;
      n += r;
    }
    const i = buf.subarray(0, n).lastIndexOf(0x0a);
    return buf.subarray(i + 1, n).toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}

function mismatch(out: string, what: string): InvalidInputError {
  const cursorFile = cursorFileFor(out);
  return new InvalidInputError(
    'EXPORT_FILE_MISMATCH',
    `Export file ${out} is not the file its cursor file ${cursorFile} describes: ${what}. It was replaced or edited since that cursor was saved (another export put in its place, lines changed); resuming would cut it there and append after another history's lines. Nothing was written. Export to a new --out (it starts with a snapshot), put back the file this cursor file belongs to, or remove both ${out} and ${cursorFile} and export again.`,
  );
}

/**
 * An export with no position to resume from (no cursor file, or an empty
 * one) and no --since starts with a snapshot. Appended to a file that
 * already holds lines (an earlier export whose cursor file was removed: the
 * fix told after a restore, done by half), that put a second history after
 * the first in one file, which an import applies as the first. Refused
 * instead (EXPORT_CURSOR_MISSING), nothing written: an empty file, or none,
 * is exported into.
 */
export function refuseWithoutCursor(out: string, point: ResumePoint): void {
  if (point.cursor !== undefined || point.offset !== undefined) return;
  const size = fs.statSync(out, { throwIfNoEntry: false })?.size ?? 0;
  if (size === 0) return;
  const cursorFile = cursorFileFor(out);
  const gone = fs.existsSync(cursorFile) ? `its cursor file ${cursorFile} holds no position` : `its cursor file ${cursorFile} is gone`;
  throw new InvalidInputError(
    'EXPORT_CURSOR_MISSING',
    `Export file ${out} already holds ${size} bytes (an earlier export's) and ${gone}: without it this export starts with a snapshot, and appending that to ${out} would put a second history after the first in one file. Nothing was written. Export to a new --out (it starts with a snapshot), or remove ${out} too and export again.`,
  );
}

/** The offset just after the file's last newline (0 if none). */
function lastNewlineEnd(file: string, size: number): number {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    let end = size;
    while (end > 0) {
      const start = Math.max(0, end - buf.length);
      const n = fs.readSync(fd, buf, 0, end - start, start);
      const i = buf.subarray(0, n).lastIndexOf(0x0a);
      if (i >= 0) return start + i + 1;
      end = start;
    }
    return 0;
  } finally {
    fs.closeSync(fd);
  }
}

/** Replaces a file atomically (write a temp file, sync it, rename over). */
export function replaceFile(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, `${text}\n`);
  const fd = fs.openSync(tmp, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}
