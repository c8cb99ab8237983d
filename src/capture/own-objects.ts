import type { Db } from '../sqlite/index.ts';
import { statementWrites } from '../sqlite/index.ts';
import { PREFIX } from './schema.ts';

/*
 * sluice's own tables, indexes, triggers and views (named `_sluice_...`, on a
 * source and on a target) are written by sluice alone: a statement a user
 * runs through `sluice query` that writes, drops or alters one is refused
 * (cli/query.ts), with the command that does what it meant. Capture's
 * triggers still write the journal when the user's statement writes a
 * captured table: that happens in the triggers' programs, not in the
 * statement's own.
 */

const LIKE_OWN = `LIKE '${PREFIX.replace(/_/g, '\\_')}%' ESCAPE '\\'`;
const OWN = `(name ${LIKE_OWN} OR tbl_name ${LIKE_OWN})`;

/** The `_sluice_` objects of `main` (and the objects on a `_sluice_` table), name to type and DDL. */
export function ownObjects(db: Db): Map<string, string> {
  const rows = db.prepare(`SELECT type, name, sql FROM main.sqlite_schema WHERE ${OWN}`).raw().all() as [string, string, string | null][];
  return new Map(rows.map(([type, name, sql]) => [name, `${type} ${sql ?? ''}`]));
}

/** The `_sluice_` objects that differ between two ownObjects: made, dropped or changed. */
export function ownObjectsChanged(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): string[] {
  const names = new Set([...before.keys(), ...after.keys()]);
  return [...names].filter((n) => before.get(n) !== after.get(n)).sort();
}

/** The `_sluice_` tables the statement `sql` writes itself (statementWrites of its own program, not its triggers'). */
export function ownTablesWritten(db: Db, sql: string): string[] {
  const own = (t: string) => t.toLowerCase().startsWith(PREFIX);
  return (statementWrites(db, sql, { triggers: false })?.tables ?? []).filter(own).sort();
}
