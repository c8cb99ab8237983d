/** Quotes an SQL identifier: any name (quotes, spaces, unicode, keywords) becomes one safe token. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Quotes an SQL string literal. Used only for DDL, where parameters cannot be bound. */
export function quoteString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * A name as SQLite compares identifiers: case-insensitively for the ASCII
 * letters only (`Foo` and `FOO` are one table, `é` and `É` are two). Use it,
 * not toLowerCase, wherever two table or column names are matched.
 */
export function foldIdent(name: string): string {
  return name.replace(/[A-Z]+/g, (s) => s.toLowerCase());
}
