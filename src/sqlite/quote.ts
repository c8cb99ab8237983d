/** Quotes an SQL identifier: any name (quotes, spaces, unicode, keywords) becomes one safe token. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Quotes an SQL string literal. Used only for DDL, where parameters cannot be bound. */
export function quoteString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
