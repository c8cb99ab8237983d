import { quoteIdent } from './quote.ts';

/** A source column's declared type, and whether it is ANY in an ordinary table (see declaredType). */
export interface DeclaredColumn {
  readonly type: string;
  /**
   * Declared ANY in an ordinary (not STRICT) table, where ANY is a type name
   * like any other and gives the column NUMERIC affinity. Absent in a
   * STRICT table, and in shapes recorded before this was (read as STRICT's).
   */
  readonly anyNumeric?: true;
}

/** Whether a declared type is ANY. */
export function isAnyType(type: string): boolean {
  return type.trim().toUpperCase() === 'ANY';
}

/**
 * The declared type a copy of a source column gets in an ordinary table (a
 * target's, or a work table): its own, but for a STRICT table's ANY. In a
 * STRICT table ANY keeps every value as written, which in an ordinary one
 * only no type does; an ordinary table's ANY keeps its NUMERIC affinity
 * (`v = '5'` is true of the 5 it stored from '5', in the copy as in the
 * source). No type has no affinity.
 */
export function declaredType(c: DeclaredColumn): string {
  return isAnyType(c.type) && c.anyNumeric !== true ? '' : c.type;
}

/*
 * A declared type and a collation name go into sluice's own DDL and SQL as
 * SQL text: from a source's schema (where a type may be any quoted string:
 * `v 'TEXT) --'` is legal, and declares the type `TEXT) --`) and from an
 * export file or a segment, which are untrusted input. Spliced as they
 * read, `TEXT) --` commented away a target's PRIMARY KEY, and a file could
 * run statements in the target. So each is written as it reads only when it
 * is plainly a type name (words, then at most `(n)` or `(n, m)`) or a
 * collation name (one word), and as a quoted identifier otherwise, which
 * SQLite takes as the same name: the declared type reads back the same, and
 * its affinity follows from it as from the source's.
 */
const TYPE_NAME =
  /^[A-Za-z_][A-Za-z0-9_]*(?: +[A-Za-z_][A-Za-z0-9_]*)*(?: *\( *[+-]?[0-9]+(?:\.[0-9]+)? *(?:, *[+-]?[0-9]+(?:\.[0-9]+)? *)?\))?$/;
/** Words that end a type name in a column definition: a type made of one would be read as a constraint. */
const CONSTRAINT_WORDS = new Set([
  'AS',
  'CHECK',
  'COLLATE',
  'CONSTRAINT',
  'DEFAULT',
  'GENERATED',
  'NOT',
  'NULL',
  'PRIMARY',
  'REFERENCES',
  'UNIQUE',
]);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A declared type as SQL text for a column definition (see above). */
export function typeSql(type: string): string {
  const t = type.trim();
  if (t === '') return '';
  const plain = TYPE_NAME.test(t) && !t.split(/[ (]/).some((w) => CONSTRAINT_WORDS.has(w.toUpperCase()));
  return plain ? t : quoteIdent(t);
}

/** A collation name as SQL text after COLLATE (see above). */
export function collationSql(name: string): string {
  return NAME.test(name) ? name : quoteIdent(name);
}

/** A column's declaration in such a table: its declared type (declaredType) and its collation. */
export function columnDecl(c: DeclaredColumn & { readonly collate: string }): string {
  return `${typeSql(declaredType(c))}${c.collate === 'BINARY' ? '' : ` COLLATE ${collationSql(c.collate)}`}`.trim();
}
