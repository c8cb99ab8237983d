import { InvalidInputError } from '../errors.ts';
import { fitsInt64, INT64_OUT_OF_RANGE, type JsonValue } from '../sqlite/index.ts';
import type { SourceShape } from '../projection/index.ts';

/*
 * Typed-value checks on a row of an export file, against its table's shape,
 * so that a value SQLite would refuse (SQLITE_MISMATCH, deep inside a
 * set-based apply, with no line number) is refused here with its line.
 * Values are already well-formed (jsonValueSchema); what is checked is what
 * the shape allows: only the table's columns, and an INTEGER PRIMARY KEY
 * (rowid alias) holds an integer.
 */
export function checkRowTypes(shape: SourceShape, row: Readonly<Record<string, JsonValue>>, at: string): void {
  const alias = shape.rowidAlias ? shape.keyColumns[0] : undefined;
  const names = columnNames(shape);
  for (const name in row) {
    if (!Object.hasOwn(row, name)) continue;
    const value = row[name] as JsonValue;
    if (!names.has(name)) {
      throw new InvalidInputError(
        'IMPORT_BAD_VALUE',
        `${at}: column ${name} is not a column of table ${shape.table} (its columns: ${shape.columns.map((c) => c.name).join(', ')}). Nothing of this line's batch or snapshot was committed; fix the line or export again.`,
      );
    }
    if (name === alias && !isInteger(value)) {
      throw new InvalidInputError(
        'IMPORT_BAD_VALUE',
        `${at}: column ${name} of table ${shape.table} is its INTEGER PRIMARY KEY, which holds only integers, but the line has ${JSON.stringify(value)}. Nothing of this line's batch or snapshot was committed; fix the line or export again.`,
      );
    }
  }
}

/** A shape's column names, made once per shape (checkRowTypes runs for every image of every line). */
const namesOf = new WeakMap<SourceShape, ReadonlySet<string>>();
function columnNames(shape: SourceShape): ReadonlySet<string> {
  let names = namesOf.get(shape);
  if (names === undefined) namesOf.set(shape, (names = new Set(shape.columns.map((c) => c.name))));
  return names;
}

function isInteger(v: JsonValue): boolean {
  return typeof v === 'number' || (v !== null && typeof v === 'object' && '$i' in v);
}

/**
 * An INTEGER value ({"$i": digits}) outside SQLite's 64-bit range in an
 * event or row line (`json`, parsed but refused by the line's schema),
 * as a refusal at its line naming the table and the column (an image's or
 * a row's, or the key column of an event's key); undefined when the line
 * has none, so that the schema's own message stands.
 */
export function integerOutOfRange(
  json: unknown,
  at: string,
  shapeOf: (table: string) => SourceShape | undefined,
): InvalidInputError | undefined {
  if (!isObject(json) || typeof json.table !== 'string') return undefined;
  const table = json.table;
  const refusal = (what: string, value: unknown) =>
    new InvalidInputError(
      'IMPORT_BAD_VALUE',
      `${at}: ${what} of table ${table} has ${JSON.stringify(value)}, ${INT64_OUT_OF_RANGE}: no SQLite value is that integer. Nothing of this line's batch or snapshot was committed; fix the line or export again.`,
    );
  for (const image of ['row', 'before', 'after']) {
    const values = json[image];
    if (!isObject(values)) continue;
    for (const name of Object.keys(values)) if (tooWideInteger(values[name])) return refusal(`column ${name}`, values[name]);
  }
  for (const field of ['key', 'beforeKey']) {
    const values = json[field];
    if (!Array.isArray(values)) continue;
    const keyColumns = shapeOf(table)?.keyColumns;
    for (const [i, v] of values.entries()) {
      if (!tooWideInteger(v)) continue;
      const column = keyColumns?.[i];
      return refusal(column === undefined ? `value ${i + 1} of the ${field}` : `key column ${column}`, v);
    }
  }
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An {"$i": digits} that no INTEGER holds. */
export function tooWideInteger(v: unknown): boolean {
  if (!isObject(v) || !Object.hasOwn(v, '$i') || Object.keys(v).length !== 1) return false;
  const digits = v.$i;
  return typeof digits === 'string' && /^-?\d+$/.test(digits) && !fitsInt64(digits);
}
