import type { Db } from '../../sqlite/index.ts';
import { foldIdent, quoteIdent, triggerUpdateOf } from '../../sqlite/index.ts';
import { errorCode } from '../../errors.ts';
import { GUARD_PREFIX } from './protect-guards.ts';
import { withFts5Shadows } from './user-indexes.ts';

/*
 * Triggers a user added to a projection's tables (an audit log of the rows
 * sync writes, a counter). A rebuild makes the tables again and the old
 * ones go with their triggers; these are made again on the new tables
 * after the copy (a copy is the source's rows, not events: it fires none of
 * them), in the swap's transaction, so a rebuild never silently takes them
 * away. sluice's own guards (`sluice protect`, protect-guards.ts) are not
 * among them: they are made again by protect's rule (ensureGuards), once.
 */

export interface UserTrigger {
  readonly name: string;
  readonly table: string;
  /** As stored in sqlite_schema: `CREATE TRIGGER <name> ...`, schema prefix and IF NOT EXISTS removed. */
  readonly sql: string;
}

/** A user's trigger that could not be made again on the rebuilt table, why, and its SQL (to fix and run again). */
export interface DroppedTrigger {
  readonly name: string;
  readonly table: string;
  readonly why: string;
  readonly sql: string;
}

/**
 * The user's triggers on `tables` (and on the tables FTS5 made for one),
 * in the order they were made (sqlite_schema's): SQLite fires triggers of
 * one event in an order that follows it, and they are made again in it.
 */
export function userTriggers(db: Db, schema: string, tables: readonly string[]): UserTrigger[] {
  if (tables.length === 0) return [];
  const names = new Set(withFts5Shadows(db, schema, tables).map(foldIdent));
  const all = db
    .prepare(
      `SELECT name, tbl_name AS "table", sql FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'trigger' AND sql IS NOT NULL ORDER BY rowid`,
    )
    .all() as UserTrigger[];
  return all.filter((tr) => names.has(foldIdent(tr.table)) && !tr.name.startsWith(GUARD_PREFIX));
}

/**
 * Makes each trigger again in `schema`, in the caller's transaction, after
 * the tables they are on were made anew. One that no longer fits is left
 * out and returned: SQLite makes a trigger without reading its body, so
 * each is checked as the statements that fire it are compiled (an INSERT,
 * an UPDATE of every column, a DELETE on its table: a column, table or
 * function its WHEN or body names that is not there), and an UPDATE OF
 * trigger's columns are looked up (one of a column the table no longer has
 * would never fire again). Any other failure (disk full, I/O) is thrown,
 * so the rebuild rolls back and keeps the trigger.
 */
export function restoreTriggers(db: Db, schema: string, triggers: readonly UserTrigger[]): DroppedTrigger[] {
  const s = quoteIdent(schema);
  const dropped: DroppedTrigger[] = [];
  const leaveOut = (tr: UserTrigger, why: string) => dropped.push({ name: tr.name, table: tr.table, why, sql: tr.sql });
  const made = db.prepare(`SELECT tbl_name FROM ${s}.sqlite_schema WHERE type = 'trigger' AND name = ? COLLATE NOCASE`).pluck();
  for (const tr of triggers) {
    // Made on the new table by the build itself (a custom handler's init may make triggers on its tables).
    const on = made.get(tr.name) as string | undefined;
    if (on !== undefined && foldIdent(on) === foldIdent(tr.table)) continue;
    const head = 'CREATE TRIGGER ';
    if (!tr.sql.startsWith(head)) {
      leaveOut(tr, `its SQL is not a CREATE TRIGGER statement sluice can replay`);
      continue;
    }
    try {
      // prepare() takes exactly one statement: SQL read from the target file never runs anything but this CREATE TRIGGER, in the target schema.
      db.prepare(`${head}${s}.${tr.sql.slice(head.length)}`).run();
    } catch (err) {
      if (!isNoLongerFits(err) || !db.inTransaction) throw err;
      leaveOut(tr, (err as Error).message);
      continue;
    }
    const why = unfit(db, schema, tr);
    if (why === undefined) continue;
    db.exec(`DROP TRIGGER ${s}.${quoteIdent(tr.name)}`);
    leaveOut(tr, why);
  }
  return dropped;
}

/**
 * The first of the user's triggers on `tables` that no longer fits its
 * table (unfit: a table, column or function its WHEN or body names is not
 * there), with why, as the target's file says it (no schema prefix).
 * SQLite makes a trigger without reading its body, and every write to its
 * table fails from then on: a sync's batch of a projection that owns the
 * table fails with SQLite's bare "no such table", which names neither the
 * trigger nor the file. Compiles only; nothing is run.
 */
export function brokenTrigger(
  db: Db,
  schema: string,
  tables: readonly string[],
): { readonly trigger: string; readonly table: string; readonly why: string } | undefined {
  for (const tr of userTriggers(db, schema, tables)) {
    const why = unfit(db, schema, tr);
    if (why !== undefined) return { trigger: tr.name, table: tr.table, why: why.replaceAll(`${schema}.`, '') };
  }
  return undefined;
}

/**
 * What to say of a write of `projections` that SQLite failed with
 * SQLITE_ERROR when one of the user's triggers on their tables no longer
 * fits (brokenTrigger): the trigger, its table, the file, why, and the fix,
 * ending with what runs the batch again (`again`). Undefined when none is
 * broken (the error is then another's) or they cannot be read.
 */
export function brokenTriggerProblem(
  db: Db,
  schema: string,
  projections: readonly { readonly name: string; readonly tables: readonly string[] }[],
  file: string,
  again: string,
): string | undefined {
  try {
    for (const p of projections) {
      const broken = brokenTrigger(db, schema, p.tables);
      if (broken === undefined) continue;
      return `trigger ${broken.trigger} on table ${broken.table} of target ${file} no longer fits its table (${broken.why}), and it runs inside sluice's writes of projection ${p.name}, so every batch of ${p.name} fails there: make it again as it should be, or drop it (DROP TRIGGER ${quoteIdent(broken.trigger)} in ${file}); then run ${again} again`;
    }
  } catch {
    /* the error SQLite gave stands */
  }
  return undefined;
}

/** Why trigger `tr`, just made on its table, does not fit it (undefined: it does). */
function unfit(db: Db, schema: string, tr: UserTrigger): string | undefined {
  const s = quoteIdent(schema);
  const table = `${s}.${quoteIdent(tr.table)}`;
  const columns = (
    db.prepare(`SELECT name FROM ${s}.pragma_table_xinfo(?) WHERE hidden = 0 ORDER BY cid`).all(tr.table) as { name: string }[]
  ).map((c) => c.name);
  const have = new Set(columns.map(foldIdent));
  const missing = (triggerUpdateOf(tr.sql) ?? []).filter((c) => !have.has(foldIdent(c)));
  if (missing.length > 0)
    return `it fires on UPDATE OF ${missing.join(', ')}, and the rebuilt table has no column ${missing.join(', ')}: it would never fire`;
  const firing = [
    `INSERT INTO ${table} DEFAULT VALUES`,
    `UPDATE ${table} SET ${columns.map((c) => `${quoteIdent(c)} = ${quoteIdent(c)}`).join(', ')}`,
    `DELETE FROM ${table}`,
  ];
  for (const sql of firing) {
    try {
      db.prepare(sql); // compiled with the table's triggers, never run
    } catch (err) {
      if (!isNoLongerFits(err)) throw err;
      return (err as Error).message;
    }
  }
  return undefined;
}

/** A name the trigger reads is gone (SQLITE_ERROR); more than one statement is refused as such too. */
function isNoLongerFits(err: unknown): boolean {
  return errorCode(err) === 'SQLITE_ERROR' || err instanceof RangeError;
}
