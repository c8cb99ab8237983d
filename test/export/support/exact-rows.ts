import { openDatabase } from '../../../src/sqlite/index.ts';
import { sortedRows } from '../../cli/support/cli.ts';

/**
 * Each row of each of `tables` by storage class and exact bytes, sorted: a
 * REAL by its 17 digits and its sign (so -0.0 is not 0.0), anything else as
 * the hex of its bytes in the file's own encoding. A table's columns are the
 * ones given, or all of them (undefined).
 */
export function exactRows(file: string, tables: Readonly<Record<string, readonly string[] | undefined>>): Record<string, string[]> {
  const db = openDatabase(file, { readonly: true });
  try {
    const out: Record<string, string[]> = {};
    for (const [t, given] of Object.entries(tables))
      out[t] = sortedRows(
        db,
        t,
        (q) =>
          `typeof(${q}) || ':' || CASE typeof(${q}) WHEN 'real' THEN printf('%!.17g', ${q}) || CASE WHEN ${q} = 0 AND atan2(${q}, -1) < 0 THEN '(-)' ELSE '' END WHEN 'null' THEN '' ELSE hex(CAST(${q} AS BLOB)) END`,
        given,
      );
    return out;
  } finally {
    db.close();
  }
}
