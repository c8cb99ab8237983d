import { z } from 'zod';
import { InvalidInputError } from '../errors.ts';

/**
 * TEXT whose bytes are not valid UTF-8. SQLite stores such bytes as they
 * are; a JS string would replace them with U+FFFD, so they travel as bytes.
 */
export class RawText {
  readonly bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }
}

/**
 * One SQLite value, by storage class: NULL, INTEGER (always bigint), REAL
 * (number), TEXT (string, or RawText when not valid UTF-8), BLOB (Uint8Array).
 */
export type SqlValue = null | bigint | number | string | Uint8Array | RawText;
type StorageClass = 'null' | 'integer' | 'real' | 'text' | 'blob';

export function storageClass(v: SqlValue): StorageClass {
  if (v === null) return 'null';
  if (typeof v === 'bigint') return 'integer';
  if (typeof v === 'number') return 'real';
  if (typeof v === 'string' || v instanceof RawText) return 'text';
  return 'blob';
}

const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Turns TEXT bytes into a string when they are valid UTF-8, else a RawText. */
export function textFromBytes(bytes: Uint8Array): string | RawText {
  try {
    return utf8Strict.decode(bytes);
  } catch {
    return new RawText(Uint8Array.from(bytes));
  }
}

function textBytes(v: string | RawText): Uint8Array {
  return typeof v === 'string' ? Buffer.from(v, 'utf8') : v.bytes;
}

/** True when a string read through the driver may hide malformed bytes (U+FFFD replaced them). */
export function mayBeLossyText(v: unknown): v is string {
  return typeof v === 'string' && v.includes('\uFFFD');
}

/**
 * Exact equality by storage class and bytes: never through collation or
 * affinity. 1 and 1.0 differ; 'abc' and 'ABC' differ; '' and X'' differ.
 */
export function sameValue(a: SqlValue, b: SqlValue): boolean {
  const ca = storageClass(a);
  if (ca !== storageClass(b)) return false;
  switch (ca) {
    case 'null':
      return true;
    case 'integer':
      return a === b;
    case 'real':
      return Object.is(a, b) || (a as number) === (b as number);
    case 'text':
      return Buffer.from(textBytes(a as string | RawText)).equals(textBytes(b as string | RawText));
    case 'blob':
      return Buffer.from(a as Uint8Array).equals(b as Uint8Array);
  }
}

export function sameRow(a: readonly SqlValue[], b: readonly SqlValue[]): boolean {
  return a.length === b.length && a.every((v, i) => sameValue(v, b[i] as SqlValue));
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** What an INTEGER outside SQLite's range is told, in the value schema and in import's refusal (export/typed-values.ts). */
export const INT64_OUT_OF_RANGE = `outside SQLite's 64-bit INTEGER range (${INT64_MIN} to ${INT64_MAX})`;

/** Whether `digits` are decimal digits (/^-?\d+$/) of an integer SQLite can hold (64 bits, signed). */
export function fitsInt64(digits: string): boolean {
  if (!/^-?\d+$/.test(digits)) return false;
  const n = BigInt(digits);
  return n >= INT64_MIN && n <= INT64_MAX;
}

/*
 * JSON encoding (JSONL export, `changes`, cursors of values). Lossless and
 * typed; plain JSON where that is unambiguous:
 *   null            -> null
 *   TEXT (UTF-8)    -> "string"
 *   INTEGER (safe)  -> 123            (|n| <= 2^53-1)
 *   INTEGER (large) -> {"$i":"9223372036854775807"} (within the 64 bits of an INTEGER)
 *   REAL            -> {"$f":1.5} | {"$f":"Infinity"|"-Infinity"|"-0"}
 *   BLOB            -> {"$b":"<base64>"}
 *   TEXT (bad UTF-8)-> {"$t":"<base64 of the bytes>"}
 */
export const jsonValueSchema = z.union([
  z.null(),
  z.string(),
  z.number().int().refine(Number.isSafeInteger, 'integers outside ±(2^53-1) use {"$i": "digits"}'),
  z.strictObject({
    $i: z
      .string()
      .regex(/^-?\d+$/, { abort: true })
      .refine(fitsInt64, INT64_OUT_OF_RANGE),
  }),
  // z.literal, not z.enum: an enum's .d.ts keys '-Infinity' as [-Infinity], which a user's tsc rejects (TS1170).
  z.strictObject({ $f: z.union([z.number(), z.literal(['Infinity', '-Infinity', '-0'])]) }),
  z.strictObject({ $b: z.base64() }),
  z.strictObject({ $t: z.base64() }),
]);
export type JsonValue = z.infer<typeof jsonValueSchema>;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function toJsonValue(v: SqlValue): JsonValue {
  if (v === null || typeof v === 'string') return v;
  if (typeof v === 'bigint') return v <= MAX_SAFE && v >= -MAX_SAFE ? Number(v) : { $i: v.toString() };
  if (typeof v === 'number') {
    if (Object.is(v, -0)) return { $f: '-0' };
    if (v === Infinity) return { $f: 'Infinity' };
    if (v === -Infinity) return { $f: '-Infinity' };
    return { $f: v };
  }
  if (v instanceof RawText) return { $t: Buffer.from(v.bytes).toString('base64') };
  return { $b: Buffer.from(v).toString('base64') };
}

export function fromJsonValue(j: unknown): SqlValue {
  // The common values first, each accepted exactly as the schema accepts it
  // (import decodes every value of every line: the schema's union costs
  // more than the rest of the decoding); anything else goes through it.
  if (j === null || typeof j === 'string') return j;
  if (typeof j === 'number' && Number.isSafeInteger(j)) return BigInt(j);
  if (typeof j === 'object' && !Array.isArray(j)) {
    const f = (j as { $f?: unknown }).$f;
    if (typeof f === 'number' && Number.isFinite(f) && Object.hasOwn(j, '$f') && Object.keys(j).length === 1) return f;
  }
  const parsed = jsonValueSchema.safeParse(j);
  if (!parsed.success) {
    throw new InvalidInputError(
      'BAD_VALUE',
      `Not a sluice JSON value: ${JSON.stringify(j)?.slice(0, 80)}. See docs/jsonl.md for the encoding.`,
    );
  }
  const v = parsed.data;
  if (v === null || typeof v === 'string') return v;
  if (typeof v === 'number') return BigInt(v);
  if ('$i' in v) return BigInt(v.$i);
  if ('$f' in v) {
    const f = v.$f;
    if (f === 'Infinity') return Infinity;
    if (f === '-Infinity') return -Infinity;
    if (f === '-0') return -0;
    return f;
  }
  if ('$b' in v) return new Uint8Array(Buffer.from(v.$b, 'base64'));
  return new RawText(new Uint8Array(Buffer.from(v.$t, 'base64')));
}

/** Value as better-sqlite3 binds it. RawText needs `CAST(? AS TEXT)` around its placeholder: see bindSql. */
export function toBindable(v: SqlValue): null | bigint | number | string | Buffer {
  if (v === null || typeof v === 'bigint' || typeof v === 'number' || typeof v === 'string') return v;
  if (v instanceof RawText) return Buffer.from(v.bytes);
  return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

/** Whether a value is text kept as its bytes (bound with placeholderFor's CAST). */
export function isRawText(v: SqlValue): boolean {
  return v instanceof RawText;
}

/** Placeholder SQL for a value: RawText is bound as a blob and cast back to TEXT, keeping its bytes. */
export function placeholderFor(v: SqlValue): string {
  return v instanceof RawText ? 'CAST(? AS TEXT)' : '?';
}

/** Named placeholder (@name) for a value, for SQL that uses one parameter more than once. */
export function namedPlaceholderFor(v: SqlValue, name: string): string {
  return v instanceof RawText ? `CAST(@${name} AS TEXT)` : `@${name}`;
}

/** Normalizes what the driver returned (Buffer to Uint8Array kept as Buffer; both are Uint8Array). */
export function fromDriver(v: unknown): SqlValue {
  if (v === null || typeof v === 'bigint' || typeof v === 'number' || typeof v === 'string') return v;
  if (v instanceof Uint8Array) return v;
  throw new TypeError(`unexpected driver value ${String(v)}`);
}
