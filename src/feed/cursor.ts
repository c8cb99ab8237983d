import { hash } from 'node:crypto';
import type { FileIdentity } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';

/*
 * A cursor is an opaque, versioned token: `sluice1.<base64url JSON>.<check>`.
 * The check (8 hex of sha256) makes a truncated or edited token a clear
 * error instead of a silently different position.
 */

export const CURSOR_VERSION = 2;
const PREFIX = 'sluice';

export type { FileIdentity };

export interface Cursor {
  readonly version: number;
  readonly sourceId: string;
  readonly generation: number;
  readonly seq: number;
  /** Tables the cursor covers, in the order given by the consumer. */
  readonly tables: readonly string[];
  /** Digest of those tables' schema fingerprints when the cursor was made. */
  readonly schema: string;
  /** Each table's armed generation, in `tables` order: a table re-armed since makes its readers rebuild (TABLE_REARMED). */
  readonly armed: readonly number[];
  /**
   * The history the cursor continues: the newest journal event at or below
   * `seq` when the cursor was made, with a digest of it (null when there was
   * none). An older copy restored over the file and written past `seq`
   * holds another event there (HISTORY_DIVERGED).
   */
  readonly anchor: Anchor | null;
  readonly file?: FileIdentity;
  /**
   * Extensions (export offsets, broker positions) carried as they are.
   * Readers ignore keys they do not know; a key that changes whether a
   * cursor is valid needs a new version instead.
   */
  readonly ext?: Readonly<Record<string, unknown>>;
}

/**
 * Extension keys (Cursor.ext) a cursor made on the source carries besides
 * `sv`: the generation of the source's last bump, and the seq its journal
 * was pruned through, when the cursor was made. They change nothing of the
 * cursor's own validity; a later cursor's say what the source was then, for
 * a reader that compares a target's cursor with it (cursorContinues).
 */
export const BUMPED_KEY = 'bg';
export const PRUNED_KEY = 'pt';

export interface Anchor {
  readonly seq: number;
  readonly digest: string;
}

/** A cursor's payload, as it is written in the token. */
interface Payload {
  s: string;
  g: number;
  q: number;
  t: string[];
  f: string;
  a: number[];
  n: [number, string] | null;
  i?: [string, string, number];
  x?: Record<string, unknown>;
}

const PAYLOAD_KEYS: ReadonlySet<string> = new Set(['s', 'g', 'q', 't', 'f', 'a', 'n', 'i', 'x']);

/*
 * Whether `p` is a payload: these keys only, each of its type (a count is a
 * safe whole number >= 0, the anchor's digest 16 hex digits), one armed
 * generation per table. Checked by hand, not by a schema library: a follower
 * makes a cursor per source commit and checks each (encodeCursor), and the
 * check was a tenth of its pass; the one rule serves both directions.
 */
function isPayload(p: unknown): p is Payload {
  if (!isRecord(p) || Object.keys(p).some((k) => !PAYLOAD_KEYS.has(k))) return false;
  const { s, g, q, t, f, a, n, i, x } = p;
  return (
    typeof s === 'string' &&
    s.length > 0 &&
    isCount(g) &&
    isCount(q) &&
    Array.isArray(t) &&
    t.every((e) => typeof e === 'string') &&
    typeof f === 'string' &&
    Array.isArray(a) &&
    a.every(isCount) &&
    a.length === t.length &&
    (n === null || (Array.isArray(n) && n.length === 2 && isCount(n[0]) && typeof n[1] === 'string' && /^[0-9a-f]{16}$/.test(n[1]))) &&
    (i === undefined ||
      (Array.isArray(i) && i.length === 3 && typeof i[0] === 'string' && typeof i[1] === 'string' && Number.isFinite(i[2]))) &&
    (x === undefined || isRecord(x))
  );
}

function isCount(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

/** A plain object (JSON's `{...}`), not an array, null or a class instance. */
function isRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function check(body: string): string {
  return hash('sha256', body, 'hex').slice(0, 8);
}

export function encodeCursor(c: Cursor): string {
  const payload: Payload = {
    s: c.sourceId,
    g: c.generation,
    q: c.seq,
    t: [...c.tables],
    f: c.schema,
    a: [...c.armed],
    n: c.anchor === null ? null : [c.anchor.seq, c.anchor.digest],
  };
  if (c.file !== undefined) payload.i = [c.file.dev, c.file.ino, c.file.birth];
  if (c.ext !== undefined) payload.x = { ...c.ext };
  // Never make a token that decoding would refuse (and never remember one).
  if (!isPayload(payload))
    throw new InvalidInputError(
      'CURSOR_MALFORMED',
      `Cannot make a cursor of ${JSON.stringify(payload)}: its fields are not those of a sluice cursor.`,
    );
  const body = `${PREFIX}${c.version}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const token = `${body}.${check(body)}`;
  // The token made now is the one decoded next (a follower stores it and
  // validates it at its next batch): keep its decoded form, as parseCursor makes it.
  if (c.version === CURSOR_VERSION) remember(token, fromPayload(payload));
  return token;
}

/** Raised for a cursor whose format version this build does not know (readers rebuild). */
export class UnknownCursorVersion extends InvalidInputError {
  readonly version: string;
  constructor(version: string) {
    super(
      'CURSOR_VERSION_UNKNOWN',
      `Cursor format version ${version} is not known to this sluice (it reads version ${CURSOR_VERSION}); the consumer must rebuild from a snapshot.`,
    );
    this.version = version;
  }
}

/*
 * A poller hands the same token to changedSince over and over; checking and
 * parsing it (sha256, base64, JSON, the payload check) each time costs more than the
 * poll's SQL. Decoded cursors are immutable, so the last few are kept.
 * Only successful decodes are cached: a bad token fails the same way every time.
 */
const DECODED_CACHE_SIZE = 64;
const decoded = new Map<string, Cursor>();

/** Parses a cursor token. Garbage, truncation and edits give a one-line error, never a trace. */
export function decodeCursor(token: string): Cursor {
  const hit = decoded.get(token);
  if (hit !== undefined) return hit;
  return remember(token, parseCursor(token));
}

function remember(token: string, c: Cursor): Cursor {
  const known = decoded.get(token);
  if (known !== undefined) return known;
  Object.freeze(c.tables);
  Object.freeze(c.armed);
  if (c.anchor !== null) Object.freeze(c.anchor);
  if (c.file !== undefined) Object.freeze(c.file);
  Object.freeze(c);
  if (decoded.size >= DECODED_CACHE_SIZE) decoded.delete(decoded.keys().next().value as string);
  decoded.set(token, c);
  return c;
}

/** Parses a token without the cache (decodeCursor is the API; tests use this to check the encoding itself). */
export function parseCursor(token: string): Cursor {
  const bad = (why: string) =>
    new InvalidInputError(
      'CURSOR_MALFORMED',
      `Cursor "${token.length > 40 ? `${token.slice(0, 40)}...` : token}" is not a valid sluice cursor (${why}). Pass a cursor printed by sluice, or omit it to start from a snapshot.`,
    );
  const m = /^sluice(\d+)\.([A-Za-z0-9_-]+)\.([0-9a-f]{8})$/.exec(token.trim());
  if (m === null) throw bad('a cursor is "sluice" and its version, then a payload and an 8-digit check, separated by dots');
  const [, version, data, sum] = m as unknown as [string, string, string, string];
  if (check(`${PREFIX}${version}.${data}`) !== sum) throw bad('checksum mismatch: truncated or edited');
  if (Number(version) !== CURSOR_VERSION) throw new UnknownCursorVersion(version);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(data, 'base64url').toString('utf8'));
  } catch {
    throw bad('payload is not JSON');
  }
  if (!isPayload(json)) throw bad('payload fields are wrong');
  return fromPayload(json);
}

function fromPayload(p: Payload): Cursor {
  return {
    version: CURSOR_VERSION,
    sourceId: p.s,
    generation: p.g,
    seq: p.q,
    tables: p.t,
    schema: p.f,
    armed: p.a,
    anchor: p.n === null ? null : { seq: p.n[0], digest: p.n[1] },
    ...(p.i === undefined ? {} : { file: { dev: p.i[0], ino: p.i[1], birth: p.i[2] } }),
    ...(p.x === undefined ? {} : { ext: p.x }),
  };
}

const digests = new Map<string, string>();

export function schemaDigest(fingerprints: readonly string[]): string {
  const key = fingerprints.join('\n');
  let d = digests.get(key);
  if (d === undefined) {
    d = hash('sha256', key, 'hex').slice(0, 16);
    // Bounded: one entry per distinct set of table schemas seen by this process.
    if (digests.size >= DECODED_CACHE_SIZE) digests.delete(digests.keys().next().value as string);
    digests.set(key, d);
  }
  return d;
}
