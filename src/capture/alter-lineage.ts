import type { Db } from '../sqlite/index.ts';
import { describeTable, foldIdent, parseRenameColumn } from '../sqlite/index.ts';

/*
 * Which column each column of a captured table is across the statements of
 * one `sluice alter` script, followed statement by statement: a column
 * keeps what it is while its name stays; a RENAME COLUMN that the statement
 * says (parsed from its text) and that did exactly that (the old name gone
 * from its position, the new one there) carries it to the new name; any
 * other name that appears is a new column, so a name dropped and added
 * again, by whatever statements, is another column. A rename is never
 * guessed from positions or types. A table that is gone after a statement
 * (dropped, renamed away, made again) keeps no column.
 */

interface Tracked {
  readonly name: string;
  /** Its CREATE TABLE text when last described (a statement that leaves it is not looked at again). */
  sql: string | null;
  columns: readonly string[];
  /** For each of `columns`, the column it was before the script (null: new). */
  from: readonly (string | null)[];
  gone: boolean;
}

export class ColumnLineage {
  readonly #tables = new Map<number, Tracked>();

  constructor(
    tables: readonly { readonly tid: number; readonly name: string; readonly sql: string | null; readonly columns: readonly string[] }[],
  ) {
    for (const t of tables) this.#tables.set(t.tid, { name: t.name, sql: t.sql, columns: t.columns, from: t.columns, gone: false });
  }

  /** Follows what the statement `text`, which has just run, did to each table. */
  afterStatement(db: Db, text: string): void {
    const rename = parseRenameColumn(text);
    const same = (a: string, b: string) => foldIdent(a) === foldIdent(b);
    const sqlOf = db.prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE").pluck();
    for (const t of this.#tables.values()) {
      if (t.gone) continue;
      const sql = sqlOf.get(t.name) as string | null | undefined;
      if (sql !== undefined && sql === t.sql) continue;
      const info = describeTable(db, t.name);
      if (info === undefined) {
        t.gone = true;
        continue;
      }
      t.sql = info.sql;
      const now = info.columns.map((c) => c.name);
      const renamed =
        rename !== undefined && same(rename.table, t.name) && (rename.schema === undefined || same(rename.schema, 'main'))
          ? rename
          : undefined;
      t.from = now.map((n, i) => {
        const was = t.columns[i];
        if (
          renamed !== undefined &&
          was !== undefined &&
          same(n, renamed.to) &&
          same(was, renamed.from) &&
          !t.columns.some((c) => same(c, renamed.to)) &&
          !now.some((c) => same(c, renamed.from))
        )
          return t.from[i] ?? null;
        const j = t.columns.findIndex((c) => same(c, n));
        return j < 0 ? null : (t.from[j] ?? null);
      });
      t.columns = now;
    }
  }

  /** For each column of table `tid` now (`after`, by name), the column it was before the script, or null. */
  columnsFrom(tid: number, after: readonly string[]): (string | null)[] {
    const t = this.#tables.get(tid);
    if (t === undefined || t.gone) return after.map(() => null);
    return after.map((n) => {
      const i = t.columns.findIndex((c) => foldIdent(c) === foldIdent(n));
      return i < 0 ? null : (t.from[i] ?? null);
    });
  }
}

/** Whether each name before and after is one column throughout (nothing renamed, nothing dropped and added again). */
export function keepsEveryName(columnsFrom: readonly (string | null)[], before: readonly string[], after: readonly string[]): boolean {
  const was = new Set(before.map(foldIdent));
  return after.every((n, i) => {
    const f = columnsFrom[i];
    return f == null ? !was.has(foldIdent(n)) : foldIdent(f) === foldIdent(n);
  });
}
