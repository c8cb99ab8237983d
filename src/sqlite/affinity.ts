/** SQLite's column affinity of a declared type (the rules of section 3.1 of its datatype docs, in their order). */
export type Affinity = 'INTEGER' | 'TEXT' | 'BLOB' | 'REAL' | 'NUMERIC';

export function affinityOf(declared: string): Affinity {
  const t = declared.toUpperCase();
  if (t.includes('INT')) return 'INTEGER';
  if (t.includes('CHAR') || t.includes('CLOB') || t.includes('TEXT')) return 'TEXT';
  if (t.includes('BLOB') || t.trim() === '') return 'BLOB';
  if (t.includes('REAL') || t.includes('FLOA') || t.includes('DOUB')) return 'REAL';
  return 'NUMERIC';
}

/**
 * Whether a column can hold -0.0 as a REAL: only one without affinity
 * (BLOB or no declared type); REAL, NUMERIC and INTEGER store it as 0.
 */
export function canHoldNegativeZero(declared: string): boolean {
  return affinityOf(declared) === 'BLOB';
}
