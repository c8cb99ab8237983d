import type { RawLine } from './raw-lines.ts';

/*
 * Lines the target already holds, found by their first bytes, so the
 * checking reader (checked-reader.ts) skips parsing them: the rows of a
 * snapshot a target has installed already, and the events at or below the
 * seq every projection of the target has applied (importer.ts says which).
 * The exporter writes each line with JSON.stringify in a fixed key order
 * (export.ts, feed/jsonl.ts), so such a line starts with bytes known in
 * advance:
 *   {"type":"row","sourceId":<id>,"seq":<snapshot seq>,"table":<table>,"row":{ … }}
 *   {"sourceId":<id>,"seq":<digits>,"table": … }
 * A line that starts otherwise (another key order, spaces, another source or
 * table, escapes written another way) or ends otherwise is parsed in full,
 * as before. A skipped line is still digested and counted, and its seq
 * (exact: the digits are read) still checked for order, so its section's
 * marker must still match; only its JSON and typed values are not checked,
 * and nothing of it is applied (the target holds it).
 */

/** Known first bytes of a line, as text (a broker's line) and as bytes (a file's). */
export class LinePrefix {
  readonly text: string;
  readonly bytes: Buffer;

  constructor(text: string) {
    this.text = text;
    this.bytes = Buffer.from(text, 'utf8');
  }

  /** Whether `raw` starts with the prefix. */
  starts(raw: RawLine): boolean {
    if (typeof raw === 'string') return raw.startsWith(this.text);
    const n = this.bytes.length;
    return raw.length > n && raw.compare(this.bytes, 0, n, 0, n) === 0;
  }

  /** The length of the prefix in `raw`'s units (chars of a string, bytes of a buffer). */
  lengthIn(raw: RawLine): number {
    return typeof raw === 'string' ? this.text.length : this.bytes.length;
  }
}

const CLOSE = 0x7d; // }

/** The code unit (string) or byte (buffer) `back` places before the end of the line's text (1: its last). */
function fromEnd(raw: RawLine, back: number): number | undefined {
  return typeof raw === 'string' ? raw.charCodeAt(raw.length - back) : raw[raw.length - 1 - back];
}

/** Whether the line's text ends with `}` (`closers` of them). */
function endsClosed(raw: RawLine, closers: number): boolean {
  for (let k = 1; k <= closers; k++) if (fromEnd(raw, k) !== CLOSE) return false;
  return true;
}

/** The first bytes of a row line of `table` in a snapshot at `seq` of source `sourceId`. */
export function rowPrefix(sourceId: string, seq: number, table: string): LinePrefix {
  return new LinePrefix(`{"type":"row","sourceId":${JSON.stringify(sourceId)},"seq":${seq},"table":${JSON.stringify(table)},"row":{`);
}

/** Whether `raw` is a row line that starts with `prefix` (rowPrefix) and ends as one does. */
export function isRowLineOf(raw: RawLine, prefix: LinePrefix): boolean {
  return prefix.starts(raw) && endsClosed(raw, 2);
}

/** The first bytes of an event line of source `sourceId`, up to its seq. */
export function eventPrefix(sourceId: string): LinePrefix {
  return new LinePrefix(`{"sourceId":${JSON.stringify(sourceId)},"seq":`);
}

/** Most digits a seq is read from (any 15-digit number is a safe integer). */
const MAX_DIGITS = 15;

/**
 * The seq of an event line that starts with `prefix` (eventPrefix), its
 * digits followed by `,` and the line ending with `}`; undefined for any
 * other line (a leading zero, more digits than a safe integer has, …),
 * which is then parsed in full.
 */
export function eventSeqOf(raw: RawLine, prefix: LinePrefix): number | undefined {
  if (!prefix.starts(raw) || !endsClosed(raw, 1)) return undefined;
  const str = typeof raw === 'string';
  const at = (i: number) => (str ? raw.charCodeAt(i) : (raw[i] as number));
  const from = prefix.lengthIn(raw);
  let seq = 0;
  let i = from;
  for (; i < raw.length && i - from <= MAX_DIGITS; i++) {
    const c = at(i);
    if (c < 0x30 || c > 0x39) break;
    seq = seq * 10 + (c - 0x30);
  }
  const digits = i - from;
  if (digits === 0 || digits > MAX_DIGITS || (digits > 1 && at(from) === 0x30) || at(i) !== 0x2c) return undefined;
  return seq;
}
