import { createHash, type Hash } from 'node:crypto';

/**
 * The digest of a section of an export file (a snapshot's table and row
 * lines, a batch's event lines): sha256 over each line's exact text and its
 * newline, in file order, as hex. The exporter feeds it the lines it
 * writes; the importer the lines it reads, as bytes from a file (the bytes
 * of the file itself, never decoded and encoded again) or as text from a
 * broker's message, so a deleted, added, edited or moved line makes the
 * marker's digest differ.
 */
export class LineDigest {
  #hash: Hash = createHash('sha256');
  #lines = 0;

  /** Adds one line, given with or without its trailing newline. */
  add(line: string): void {
    this.#hash.update(line);
    if (!line.endsWith('\n')) this.#hash.update('\n');
    this.#lines++;
  }

  /** Adds one line given as its bytes, which end with its newline (raw-lines.ts). */
  addBytes(line: Buffer): void {
    this.#hash.update(line);
    this.#lines++;
  }

  get lines(): number {
    return this.#lines;
  }

  /** The digest of the lines added since the last take, and a fresh start. */
  take(): string {
    const d = this.#hash.digest('hex');
    this.#hash = createHash('sha256');
    this.#lines = 0;
    return d;
  }
}
