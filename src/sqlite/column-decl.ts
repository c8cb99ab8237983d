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

/** A column's declaration in such a table: its declared type (declaredType) and its collation. */
export function columnDecl(c: DeclaredColumn & { readonly collate: string }): string {
  return `${declaredType(c)}${c.collate === 'BINARY' ? '' : ` COLLATE ${c.collate}`}`.trim();
}
