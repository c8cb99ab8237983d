import type { Db } from './db.ts';
import { StoredValueError } from '../errors.ts';
import { databaseFile } from './introspect.ts';

/*
 * One row of sluice's own tables (a source's or a target's), as read with
 * `SELECT *`, read into a typed record in one place: each column through
 * one of these, which throws StoredValueError (naming the file, the table,
 * the row, the column and the value) for a value this sluice does not read.
 * A column an older sluice's table lacks is undefined, and reads as NULL.
 */
export class StoredRow {
  readonly #row: Readonly<Record<string, unknown>>;
  readonly #db: Db;
  readonly #at: { readonly role: 'Source' | 'Target'; readonly schema: string; readonly table: string; readonly row: string };

  constructor(
    db: Db,
    at: { readonly role: 'Source' | 'Target'; readonly schema: string; readonly table: string; readonly row: string },
    row: Readonly<Record<string, unknown>>,
  ) {
    this.#db = db;
    this.#at = at;
    this.#row = row;
  }

  /** The value as stored (undefined when the table has no such column). */
  raw(column: string): unknown {
    return this.#row[column];
  }

  /** Throws: `column` holds a value this sluice does not read; `expected` is what it reads there (`a whole number`). */
  refuse(column: string, expected: string): never {
    const { role, schema, table, row } = this.#at;
    throw new StoredValueError({ role, file: databaseFile(this.#db, schema), table, row, column }, this.#row[column], expected);
  }

  text(column: string): string {
    const v = this.#row[column];
    return typeof v === 'string' ? v : this.refuse(column, 'text');
  }

  textOrNull(column: string): string | null {
    const v = this.#row[column];
    return v === null || v === undefined ? null : typeof v === 'string' ? v : this.refuse(column, 'text or NULL');
  }

  whole(column: string): number {
    const v = this.#row[column];
    return typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v)) ? Number(v) : this.refuse(column, 'a whole number');
  }

  wholeOrNull(column: string): number | null {
    const v = this.#row[column];
    return v === null || v === undefined ? null : this.whole(column);
  }

  /** One of `values` (text). */
  oneOf<T extends string>(column: string, values: readonly T[]): T {
    const v = this.#row[column];
    return typeof v === 'string' && (values as readonly string[]).includes(v) ? (v as T) : this.refuse(column, either(values));
  }

  /** Text holding JSON that `parse` reads (undefined: it does not), or NULL. */
  jsonOrNull<T>(column: string, parse: (json: unknown) => T | undefined, expected: string): T | null {
    const text = this.textOrNull(column);
    if (text === null) return null;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return this.refuse(column, expected);
    }
    return parse(json) ?? this.refuse(column, expected);
  }

  /** Text holding JSON that `parse` reads. */
  json<T>(column: string, parse: (json: unknown) => T | undefined, expected: string): T {
    return this.jsonOrNull(column, parse, expected) ?? this.refuse(column, expected);
  }
}

/** `a, b or c`. */
export function either(names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1) ?? ''}`;
}

/** `json` when it is an array of strings. */
export function stringList(json: unknown): string[] | undefined {
  return Array.isArray(json) && json.every((s) => typeof s === 'string') ? json : undefined;
}

/** `json` when it is a JSON object (not an array, not null). */
export function jsonObject(json: unknown): Readonly<Record<string, unknown>> | undefined {
  return typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
}
