import { InvalidInputError } from '../errors.ts';
import type { JsonValue } from '../sqlite/index.ts';
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
