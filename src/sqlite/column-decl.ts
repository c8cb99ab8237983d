/**
 * The declared type a copy of a source column gets in an ordinary table (a
 * target's, or a work table): its own, but for ANY. In a STRICT table ANY
 * keeps every value as written; in an ordinary one it has NUMERIC affinity
 * and would turn the text '3' into 3. No type has no affinity.
 */
export function declaredType(type: string): string {
  return type.trim().toUpperCase() === 'ANY' ? '' : type;
}

/** A column's declaration in such a table: its declared type (declaredType) and its collation. */
export function columnDecl(c: { readonly type: string; readonly collate: string }): string {
  return `${declaredType(c.type)}${c.collate === 'BINARY' ? '' : ` COLLATE ${c.collate}`}`.trim();
}
