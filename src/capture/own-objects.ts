import type { Db } from '../sqlite/index.ts';
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

const OWN = `(name LIKE '${PREFIX.replace(/_/g, '\\_')}%' ESCAPE '\\' OR tbl_name LIKE '${PREFIX.replace(/_/g, '\\_')}%' ESCAPE '\\')`;

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

/**
 * The `_sluice_` tables the statement `sql` writes itself (its program,
 * EXPLAIN: each b-tree it opens for writing, empties or destroys, a table
 * or one of its indexes). Empty when it does not compile (its own run says
 * why).
 */
export function ownTablesWritten(db: Db, sql: string): string[] {
  let program: { addr: number | bigint; opcode: string; p1: number | bigint; p2: number | bigint; p3: number | bigint }[];
  try {
    program = db.prepare(`EXPLAIN ${sql}`).all() as typeof program;
  } catch {
    return [];
  }
  const roots = new Map(
    (
      db.prepare(`SELECT rootpage, tbl_name FROM main.sqlite_schema WHERE rootpage > 0 AND ${OWN}`).raw().all() as [
        bigint | number,
        string,
      ][]
    ).map(([root, table]) => [Number(root), table]),
  );
  const written = new Set<string>();
  // The statement's own program only: EXPLAIN lists the programs of the triggers it fires after it, each from addr 0
  // (capture's triggers write the journal when the statement writes a captured table).
  const own = program.findIndex((op, i) => i > 0 && Number(op.addr) === 0);
  for (const op of own < 0 ? program : program.slice(0, own)) {
    // A b-tree opened for writing, emptied whole (a DELETE with no WHERE), or destroyed (a DROP).
    const root =
      op.opcode === 'OpenWrite' && Number(op.p3) === 0 ? op.p2 : op.opcode === 'Clear' || op.opcode === 'Destroy' ? op.p1 : undefined;
    const t = root === undefined ? undefined : roots.get(Number(root));
    if (t !== undefined) written.add(t);
  }
  return [...written].sort();
}
