/*
 * Projection names. A name a user gives is letters, digits, "_", "." and
 * "-", starting with a letter or digit, at most 100 characters (it is typed
 * on command lines and shows in reports). The default name of a mirror is its
 * table's name when that is such a name; any other table name (a leading
 * "_", spaces, quotes, non-ASCII letters, more than 100 characters, empty)
 * is escaped: "_", then the name's UTF-8 bytes, ASCII letters and digits as
 * they are and every other byte as "_" and two lowercase hex digits.
 *
 * So the default name is a function of the table name alone and is
 * injective: an escaped name starts with "_", which a plain one cannot, and
 * "_" itself is escaped. It also keeps apart, under ASCII case folding, any
 * two tables SQLite lets exist side by side (SQLite folds only ASCII letters
 * in names): folding an escaped name folds just the letters kept as they
 * are, exactly as folding the table name would. And a name valid before
 * the escape existed is its own default, so older targets keep theirs.
 */

const PLAIN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const PLAIN_MAX = 100;
const ESCAPED = /^_(?:[A-Za-z0-9]|_[0-9a-f]{2})*$/;

export const PROJECTION_NAME_RULE = `use letters, digits, "_", "." and "-", starting with a letter or digit, at most ${PLAIN_MAX} characters (or a table's default name: "_", then letters, digits and "_xx" byte escapes)`;

function isPlain(name: string): boolean {
  return name.length <= PLAIN_MAX && PLAIN.test(name);
}

export function isProjectionName(name: string): boolean {
  return isPlain(name) || ESCAPED.test(name);
}

/** The name `sluice sync` gives the mirror of `table` when no definition is given. */
export function defaultProjectionName(table: string): string {
  if (isPlain(table)) return table;
  let out = '_';
  for (const byte of Buffer.from(table, 'utf8')) {
    const alnum = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
    out += alnum ? String.fromCharCode(byte) : `_${byte.toString(16).padStart(2, '0')}`;
  }
  return out;
}
