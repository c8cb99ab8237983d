import { InvalidInputError } from '../errors.ts';
import { foldIdent } from '../sqlite/index.ts';

/*
 * The changed-column mask of an update event: which of the table's columns
 * (in table order) the write changed, by storage class and bytes.
 *
 * Layout, for a table of n columns (bit i is column i):
 *   n <= 63: an INTEGER, bit i = 1 << i (never negative).
 *   n >= 64: a BLOB of ceil(n / 16) * 2 bytes (always even: SQLite truncates
 *            an odd-length concatenation in a UTF-16 database), bit i is
 *            bit (i % 8) of byte floor(i / 8); the padding bits are 0.
 *   NULL:    not known, which means every column changed: inserts, deletes
 *            (the REPLACE guards' included), events journaled before
 *            format 3, counter mode.
 * Built in the trigger from built-in functions of SQLite 3.37 only (no
 * unhex()): each byte is picked out of a 256-byte constant with substr(),
 * and the bytes are joined two at a time with ||, then CAST AS BLOB.
 */

/** A mask as stored in the journal and read by the driver: INTEGER (bigint), BLOB, or NULL. */
export type ColumnMask = bigint | Uint8Array | null;

/** Columns a mask fits in as an INTEGER; wider tables use a BLOB. */
export const MAX_INTEGER_MASK_COLUMNS = 63;

const BYTE_TABLE = `X'${Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0').toUpperCase()).join('')}'`;

/** Bytes in the BLOB mask of a table n columns wide (even). */
export function maskBytes(n: number): number {
  return Math.ceil(n / 16) * 2;
}

/**
 * SQL computing the mask of a write, given for each column (table order) a
 * boolean SQL expression that is true when the write changed it.
 */
export function maskSql(changed: readonly string[]): string {
  const n = changed.length;
  const bits = (from: number, to: number) =>
    changed
      .slice(from, to)
      .map((e, k) => (k === 0 ? `(${e})` : `((${e}) << ${k})`))
      .join(' | ');
  if (n <= MAX_INTEGER_MASK_COLUMNS) {
    return changed.map((e, i) => (i === 0 ? `(${e})` : `((${e}) << ${i})`)).join('\n    | ');
  }
  const bytes = Array.from({ length: maskBytes(n) }, (_, j) =>
    j * 8 >= n ? `X'00'` : `substr(${BYTE_TABLE}, 1 + (${bits(j * 8, Math.min(n, j * 8 + 8))}), 1)`,
  );
  const pairs: string[] = [];
  for (let j = 0; j < bytes.length; j += 2) pairs.push(`(${bytes[j] as string} || ${bytes[j + 1] as string})`);
  return `CAST(${pairs.join('\n    || ')} AS BLOB)`;
}

/** Whether column i's bit is set in a known (non-null) mask. */
function bitSet(mask: bigint | Uint8Array, i: number): boolean {
  if (typeof mask === 'bigint') return ((mask >> BigInt(i)) & 1n) === 1n;
  return (((mask[i >> 3] ?? 0) >> (i & 7)) & 1) === 1;
}

/**
 * The names of the columns a mask says changed, in table order, or
 * undefined when the mask is not known (NULL: every column changed).
 */
export function decodeMask(mask: ColumnMask | number | undefined, columns: readonly string[]): string[] | undefined {
  if (mask === null || mask === undefined) return undefined;
  const m = typeof mask === 'number' ? BigInt(mask) : mask;
  return columns.filter((_, i) => bitSet(m, i));
}

/** The mask with exactly the columns at `indexes` set, for a table of `columns.length` columns. */
function maskOfIndexes(n: number, indexes: Iterable<number>): bigint | Uint8Array {
  if (n <= MAX_INTEGER_MASK_COLUMNS) {
    let m = 0n;
    for (const i of indexes) m |= 1n << BigInt(i);
    return m;
  }
  const b = new Uint8Array(maskBytes(n));
  for (const i of indexes) b[i >> 3] = (b[i >> 3] as number) | (1 << (i & 7));
  return b;
}

/**
 * The mask of `names` among a table's `columns` (table order), as the
 * journal stores it. A name the table does not have is refused, naming the
 * table (when given) and its columns. Names match as SQLite matches
 * identifiers (ASCII case folded).
 */
export function maskFor(columns: readonly string[], names: readonly string[], table?: string): bigint | Uint8Array {
  const folded = columns.map(foldIdent);
  const indexes = names.map((name) => {
    const i = folded.indexOf(foldIdent(name));
    if (i < 0) {
      const of = table === undefined ? 'The table' : `Table ${table}`;
      throw new InvalidInputError(
        'UNKNOWN_COLUMN',
        `${of} has no column ${name}; its columns are ${columns.join(', ')}. Name columns of the table (e.g. --columns ${columns.slice(0, 2).join(',')}).`,
      );
    }
    return i;
  });
  return maskOfIndexes(columns.length, indexes);
}

/** The stored mask of an event that changed the columns `changed` (undefined: not known, NULL). */
export function encodeMask(columns: readonly string[], changed: readonly string[] | undefined): ColumnMask {
  return changed === undefined ? null : maskFor(columns, changed);
}

/**
 * Whether an event with mask `mask` changed any column of `readMask` (made
 * by maskFor over the same columns). A NULL mask changed every column.
 */
export function anyChanged(mask: ColumnMask | number | undefined, readMask: bigint | Uint8Array): boolean {
  if (mask === null || mask === undefined) return true;
  if (typeof readMask === 'bigint') {
    const m = typeof mask === 'number' ? BigInt(mask) : mask;
    if (typeof m === 'bigint') return (m & readMask) !== 0n;
    return m.some((byte, j) => (byte & Number((readMask >> BigInt(j * 8)) & 0xffn)) !== 0);
  }
  if (typeof mask === 'bigint' || typeof mask === 'number') {
    const m = BigInt(mask);
    return readMask.some((byte, j) => (byte & Number((m >> BigInt(j * 8)) & 0xffn)) !== 0);
  }
  return readMask.some((byte, j) => (byte & (mask[j] ?? 0)) !== 0);
}

/**
 * SQL that is true when the mask in `maskExpr` (a journal row's mask)
 * changed any column of `readMask`, or is NULL (every column changed).
 * Built-in functions of SQLite 3.37 only: a byte of a BLOB mask is read as
 * its position in a 256-byte constant.
 */
export function anyChangedSql(maskExpr: string, readMask: bigint | Uint8Array): string {
  if (typeof readMask === 'bigint') return `(${maskExpr} IS NULL OR (${maskExpr} & ${readMask.toString()}) <> 0)`;
  const tests: string[] = [];
  readMask.forEach((byte, j) => {
    if (byte !== 0) tests.push(`((instr(${BYTE_TABLE}, substr(${maskExpr}, ${j + 1}, 1)) - 1) & ${byte}) <> 0`);
  });
  return `(${maskExpr} IS NULL${tests.map((t) => ` OR ${t}`).join('')})`;
}
