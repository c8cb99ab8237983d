import fs from 'node:fs';

/*
 * The lines of an export file as bytes, for the checking reader
 * (checked-reader.ts): it digests a line's bytes as they are in the file
 * (line-digest.ts), finds a line the target already holds by its first
 * bytes (held-lines.ts), and decodes only the lines it parses. Lines are
 * split as node's readline splits them with `crlfDelay: Infinity` (what the
 * reader used before): at "\n", "\r\n" and a lone "\r", none of them part
 * of the line. Each line is given with one "\n" at its end (a line that
 * ended otherwise, or not at all, is copied with one), so its digest is
 * that of its text and newline, as the exporter computed it.
 */

const LF = 0x0a;
const CR = 0x0d;

/** A line's bytes ending with its "\n" (raw-lines.ts), or a line's text without one (a broker message's line). */
export type RawLine = string | Buffer;

/** The line's text (without its newline). Bytes that are not UTF-8 become U+FFFD, as readline decoded them. */
export function lineText(raw: RawLine): string {
  return typeof raw === 'string' ? raw : raw.toString('utf8', 0, raw.length - 1);
}

/** `bytes` (no newline in it) with a "\n" after, in a new buffer. */
function terminated(bytes: Buffer): Buffer {
  const out = Buffer.allocUnsafe(bytes.length + 1);
  bytes.copy(out, 0);
  out[bytes.length] = LF;
  return out;
}

/**
 * Pushes the lines of `seg`: a line and its "\n" (`endsAtLf`), or the file's
 * unterminated end. Split at "\r" as readline does.
 */
function pushSplit(seg: Buffer, endsAtLf: boolean, out: Buffer[]): void {
  if (seg.indexOf(CR) < 0) {
    out.push(endsAtLf ? seg : terminated(seg)); // the common case: no copy
    return;
  }
  // "\r\n" ends one line; a lone "\r" ends one too.
  let body = endsAtLf ? seg.subarray(0, seg.length - 1) : seg;
  if (endsAtLf && body[body.length - 1] === CR) body = body.subarray(0, body.length - 1);
  let start = 0;
  for (let i = body.indexOf(CR); i >= 0; i = body.indexOf(CR, start)) {
    out.push(terminated(body.subarray(start, i)));
    start = i + 1;
  }
  // A "\r" as the very last byte of the file ends the line before it and starts none.
  if (start < body.length || endsAtLf) out.push(terminated(body.subarray(start)));
}

/** Bytes read at a time; a line longer than this grows the buffer. */
const READ_SIZE = 1 << 16;

/**
 * The lines of a file, a group per read (one await per read, not per line).
 * One buffer is read into again and again (no memory is allocated per read,
 * which the garbage collector would see late): a group's lines are valid
 * only until the next group is asked for, so a reader must copy (or decode)
 * what it keeps.
 */
export class FileLines {
  readonly #file: string;
  #read = 0;

  constructor(file: string) {
    this.#file = file;
  }

  /** Bytes of the file read so far. */
  get bytesRead(): number {
    return this.#read;
  }

  async *groups(): AsyncGenerator<Buffer[]> {
    const fh = await fs.promises.open(this.#file, 'r');
    try {
      let buf = Buffer.allocUnsafe(READ_SIZE);
      let kept = 0; // bytes of an unfinished line at the start of buf
      for (;;) {
        if (kept === buf.length) {
          const bigger = Buffer.allocUnsafe(buf.length * 2);
          buf.copy(bigger, 0, 0, kept);
          buf = bigger;
        }
        const { bytesRead } = await fh.read(buf, kept, buf.length - kept, null);
        if (bytesRead === 0) break;
        this.#read += bytesRead;
        const end = kept + bytesRead;
        const view = buf.subarray(0, end);
        const out: Buffer[] = [];
        let start = 0;
        for (let i = view.indexOf(LF, kept); i >= 0; i = view.indexOf(LF, start)) {
          pushSplit(view.subarray(start, i + 1), true, out);
          start = i + 1;
        }
        if (out.length > 0) yield out;
        // The unfinished line moves to the front (after the group is consumed: its lines may point before it).
        buf.copy(buf, 0, start, end);
        kept = end - start;
      }
      if (kept > 0) {
        const out: Buffer[] = [];
        pushSplit(buf.subarray(0, kept), false, out);
        yield out;
      }
    } finally {
      await fh.close();
    }
  }
}
