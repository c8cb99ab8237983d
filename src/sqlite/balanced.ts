/*
 * SQLite limits the depth of an expression tree to 1000 (SQLITE_MAX_EXPR_DEPTH),
 * and `a AND b AND c ...` parses left-deep: one level per term. A condition
 * made of one test per column of a wide table (up to the ~1000 columns capture
 * takes) is written as a balanced tree instead, log2(n) levels deep.
 */

/** `a AND b AND …` as a balanced tree (`1` when there are no terms). */
export function allOf(terms: readonly string[]): string {
  return balanced(terms, 'AND', '1');
}

/** `a OR b OR …` as a balanced tree (`0` when there are no terms). */
export function anyOf(terms: readonly string[]): string {
  return balanced(terms, 'OR', '0');
}

function balanced(terms: readonly string[], op: 'AND' | 'OR', none: string): string {
  if (terms.length === 0) return none;
  if (terms.length === 1) return `(${terms[0] as string})`;
  const mid = terms.length >> 1;
  return `(${balanced(terms.slice(0, mid), op, none)} ${op} ${balanced(terms.slice(mid), op, none)})`;
}
