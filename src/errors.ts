import type { ReasonCode } from './reasons.ts';

/**
 * Every error sluice raises on purpose is a SluiceError with a stable `code`,
 * one of src/reasons.ts (a code not there does not compile).
 * Messages name the object, the rule that was broken and the fix.
 */
export class SluiceError extends Error {
  readonly code: ReasonCode;
  /** Process exit code the CLI uses: 1 error, 2 usage, 3 fail-closed state that needs action. */
  readonly exitCode: 1 | 2 | 3;

  constructor(code: ReasonCode, message: string, options: { readonly cause?: unknown; readonly exitCode?: 1 | 2 | 3 } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SluiceError';
    this.code = code;
    this.exitCode = options.exitCode ?? 1;
  }
}

/** A capture gate refused a table (no key, view, FK cycle, namespace collision...). Nothing was written. */
export class CaptureRefusedError extends SluiceError {
  readonly table: string;
  constructor(code: ReasonCode, table: string, message: string, options: { readonly cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'CaptureRefusedError';
    this.table = table;
  }
}

/** A fail-closed state that needs action: rebuild, re-arm, reinit, or repair. */
export class FailClosedError extends SluiceError {
  readonly detail: Readonly<Record<string, unknown>>;
  constructor(
    code: ReasonCode,
    message: string,
    detail: Readonly<Record<string, unknown>> = {},
    options: { readonly cause?: unknown } = {},
  ) {
    super(code, message, { ...options, exitCode: 3 });
    this.name = 'FailClosedError';
    this.detail = detail;
  }
}

/** Where a stored value was read: the file (as `Source ...` or `Target ...`), sluice's table, the row and the column. */
interface StoredValuePlace {
  readonly role: 'Source' | 'Target';
  readonly file: string;
  readonly table: string;
  /** What names the row in its table: a projection's or a captured table's name, an alter's id. */
  readonly row: string;
  readonly column: string;
}

/**
 * A row of sluice's own tables holds a value this sluice does not read (a
 * newer sluice wrote it, or a hand edit), found where the row is read:
 * nothing is done with it. `expected` says what this sluice reads there
 * (`a whole number`, `mirror, map, fts5 or custom`).
 * Exit 3.
 */
export class StoredValueError extends FailClosedError {
  constructor(at: StoredValuePlace, value: unknown, expected: string) {
    super(
      'STORED_VALUE_UNKNOWN',
      `${at.role} ${at.file}: ${at.table} row ${at.row} has ${at.column} ${shownValue(value)}, which this sluice does not read (it reads ${expected}). A newer sluice wrote it, or it was edited by hand: run the sluice that wrote it, or set ${at.column} back to a value this one reads.`,
      { file: at.file, table: at.table, row: at.row, column: at.column },
    );
    this.name = 'StoredValueError';
  }
}

/** A stored value as a message shows it: text quoted as SQL writes it (cut at 80 characters), a number, NULL, a blob's size. */
function shownValue(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'string') return `'${(v.length > 80 ? `${v.slice(0, 80)}...` : v).replaceAll("'", "''")}'`;
  if (v instanceof Uint8Array) return `a blob of ${v.length} bytes`;
  return String(v);
}

/** Bad input from the caller (definition, cursor string, arguments): exit 1, or 2 for an argument the command does not accept. */
export class InvalidInputError extends SluiceError {
  constructor(code: ReasonCode, message: string, options: { readonly cause?: unknown; readonly exitCode?: 1 | 2 } = {}) {
    super(code, message, options);
    this.name = 'InvalidInputError';
  }
}

/**
 * Another process held a file's write lock past the busy timeout (sync's
 * --busy-timeout): nothing of the batch was committed. Exit 1.
 */
export class FileBusyError extends SluiceError {
  constructor(
    readonly role: 'source' | 'target',
    readonly file: string,
    readonly timeoutMs: number,
    options: { readonly cause?: unknown } = {},
  ) {
    super(
      role === 'source' ? 'SOURCE_BUSY' : 'TARGET_BUSY',
      `${role === 'source' ? 'Source' : 'Target'} ${file} is locked: another process holds its write lock, and sync waited ${timeoutMs} ms for it (--busy-timeout). Nothing of this batch was committed; run sync again once that process commits, or wait longer with --busy-timeout MS.`,
      options,
    );
    this.name = 'FileBusyError';
  }
}

/**
 * A write failed with SQLITE_FULL: the disk, or the file's size limit
 * (sync --max-target-mb), is full. Nothing of the batch was committed. Exit 1.
 */
export class FileFullError extends SluiceError {
  constructor(file: string, limitMb: number | undefined, options: { readonly cause?: unknown } = {}) {
    const limit = limitMb === undefined ? '' : ` or raise --max-target-mb ${limitMb}`;
    super(
      'TARGET_FULL',
      `Target ${file} cannot grow: the disk or the file's size limit is full (SQLITE_FULL). Nothing of this batch was committed. Free disk space${limit}, then run sync again: it resumes from the target's cursor.`,
      options,
    );
    this.name = 'FileFullError';
  }
}

/** The `code` an error carries (better-sqlite3's SQLITE_..., Node's ENOENT or EPIPE, a SluiceError's, a NATS status), or undefined. */
export function errorCode(err: unknown): string | number | undefined {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' || typeof code === 'number' ? code : undefined;
}

/** The `message` a thrown value carries when it is a string (an Error's, or any object's), or undefined. */
export function errorMessage(err: unknown): string | undefined {
  const message = (err as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' ? message : undefined;
}

/** True for SQLite's "the file is damaged" errors (SQLITE_CORRUPT, SQLITE_CORRUPT_*, SQLITE_NOTADB met mid-run). */
export function isSqliteCorrupt(err: unknown): boolean {
  const code = errorCode(err);
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB');
}

export function isSqliteBusy(err: unknown): boolean {
  const code = errorCode(err);
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/**
 * Refuses an empty database path (an unset shell variable, say) with
 * BAD_PATH: SQLite opens "" as a temporary database deleted when it closes,
 * so a sync or an import into it would report success and keep nothing.
 */
export function refuseEmptyPath(file: string, role: string): void {
  if (file.trim() === '')
    throw new InvalidInputError(
      'BAD_PATH',
      `The ${role} path is empty: SQLite would make a temporary database of it, deleted when it closes, and nothing would be kept. Pass the database's path (is a shell variable unset?).`,
    );
}
