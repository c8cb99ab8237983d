import type { Db } from './connection.ts';
import { connectionState, slot } from './connection-state.ts';
import { RawText, mayBeLossyText, textFromBytes } from './codec.ts';
import { InvalidInputError } from '../errors.ts';

/*
 * A database's text encoding (PRAGMA encoding), fixed when its first table
 * is made. SQLite stores TEXT in it, and `CAST(x AS BLOB)` gives those bytes;
 * ATTACH refuses a database in another encoding than the main one.
 *
 * sluice keeps a TEXT value exact by its bytes, so the bytes must be read
 * in the database's own encoding: in a UTF-16 database every TEXT is a
 * sequence of 16-bit code units, which a JS string holds exactly (an
 * unpaired surrogate included, which has no UTF-8 form); in a UTF-8
 * database TEXT that is not valid UTF-8 is kept as bytes (RawText).
 */

export const TEXT_ENCODINGS = ['UTF-8', 'UTF-16le', 'UTF-16be'] as const;
export type TextEncoding = (typeof TEXT_ENCODINGS)[number];

/** The main database's encoding, once read (adoptEncoding forgets it). */
const mainEncoding = slot('text-encoding', (): { value?: TextEncoding } => ({}));

export function textEncoding(db: Db, schema = 'main'): TextEncoding {
  const known = schema === 'main' ? connectionState(db).get(mainEncoding) : undefined;
  if (known?.value !== undefined) return known.value;
  const e = db.pragma(`${schema}.encoding`, { simple: true }) as TextEncoding;
  if (known !== undefined) known.value = e;
  return e;
}

/** TEXT bytes as `CAST(x AS BLOB)` gives them in `db`, as the exact value. */
export function textFromDbBytes(db: Db, bytes: Uint8Array): string | RawText {
  const e = textEncoding(db);
  if (e === 'UTF-8') return textFromBytes(bytes);
  const b = Buffer.from(bytes);
  if (e === 'UTF-16be') b.swap16();
  return b.toString('utf16le');
}

/** A string with an unpaired surrogate, as the bytes `db` stores it in (only a UTF-16 database can). */
export function unpairedToDb(db: Db, s: string): RawText {
  const e = textEncoding(db);
  if (e === 'UTF-8') {
    throw new InvalidInputError(
      'TEXT_ENCODING',
      `A TEXT value with an unpaired UTF-16 surrogate cannot be stored in the UTF-8 database ${db.name}: it has no UTF-8 form. Use a target in the source's encoding.`,
    );
  }
  const b = Buffer.from(s, 'utf16le');
  if (e === 'UTF-16be') b.swap16();
  return new RawText(new Uint8Array(b));
}

/** Makes a database with no schema yet use `encoding` (a no-op once it has tables). */
export function adoptEncoding(db: Db, encoding: TextEncoding): void {
  db.pragma(`encoding = '${encoding}'`);
  connectionState(db).delete(mainEncoding);
}

const UNPAIRED = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True for a string holding an unpaired surrogate (text only a UTF-16 database has). */
export function hasUnpairedSurrogate(s: string): boolean {
  return UNPAIRED.test(s);
}

/**
 * Makes a target fit a source in `encoding`: a target with no schema yet
 * takes it; one in another encoding is refused (TARGET_ENCODING), before
 * anything is written, since its TEXT could not hold the source's exactly.
 */
export function matchTargetEncoding(db: Db, target: string, encoding: TextEncoding): void {
  const empty = Number(db.prepare('SELECT count(*) FROM main.sqlite_schema').pluck().get()) === 0;
  if (empty) adoptEncoding(db, encoding);
  const have = textEncoding(db);
  if (have !== encoding) throw encodingMismatch(target, have, encoding);
}

export function encodingMismatch(target: string, have: string, want: string): InvalidInputError {
  return new InvalidInputError(
    'TARGET_ENCODING',
    `Target ${target} stores text as ${have}, but its source's text is ${want}: sluice copies TEXT exactly, and it cannot be exact across encodings. Use a new target (it takes the source's encoding), or convert this one (sqlite3 .dump into a new database made with PRAGMA encoding = '${want}').`,
  );
}

const SURROGATE_OR_REPLACEMENT = /[\uD800-\uDFFF\uFFFD]/;

/**
 * Which strings the driver may have read wrong in `db`, to be re-read as
 * bytes. The driver reads TEXT as UTF-8: in a UTF-8 database malformed bytes
 * come back as U+FFFD; in a UTF-16 one SQLite's conversion also pairs an
 * unpaired high surrogate with the next code unit, which comes back as a
 * character above U+FFFF, so there any surrogate pair is re-read as well.
 */
export function lossyTextTest(db: Db): (v: unknown) => boolean {
  return textEncoding(db) === 'UTF-8' ? mayBeLossyText : (v) => typeof v === 'string' && SURROGATE_OR_REPLACEMENT.test(v);
}
