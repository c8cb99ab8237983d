import { type Db, quoteIdent, quoteString, cachedStatement } from '../../sqlite/index.ts';
import { createHash } from 'node:crypto';
import { PROTECT_FUNCTION } from './allow-writes.ts';

/*
 * What `sluice protect` leaves in a target (apply/edits/protect.ts makes
 * and drops them): the marker table that says the target is protected, and
 * per guarded table three BEFORE triggers named from the table's name.
 * Here, below both, so that health can see a guard another program dropped
 * or made again, and sync make it again, by the one SQL protect writes.
 */

export const PROTECTED_TABLE = '_sluice_protected';
export const GUARD_PREFIX = '_sluice_protect_';
/** Each guard trigger's name suffix, and the write it refuses. */
const GUARD_OPS = { i: 'INSERT', u: 'UPDATE', d: 'DELETE' } as const;
type GuardSuffix = keyof typeof GUARD_OPS;
const SUFFIXES = Object.keys(GUARD_OPS) as GuardSuffix[];

/** The guard trigger of `table` for the write `suffix` (a key of GUARD_OPS). */
function guardName(table: string, suffix: string): string {
  return `${GUARD_PREFIX}${createHash('sha256').update(table.toLowerCase()).digest('hex').slice(0, 16)}_${suffix}`;
}

/** What follows the name in the guard of `table` (of `projection`) for the write `suffix`: SQLite stores it as written. */
function guardBody(projection: string, table: string, suffix: GuardSuffix): string {
  const message = `table ${table} belongs to sluice projection ${projection} of this target, which is protected (sluice protect): change its source, or run sluice protect --off first`;
  return `BEFORE ${GUARD_OPS[suffix]} ON ${quoteIdent(table)} WHEN ${PROTECT_FUNCTION}() IS NOT 1 BEGIN SELECT RAISE(ABORT, ${quoteString(message)}); END`;
}

/** Whether the target is protected (the marker table is there). */
export function isProtected(db: Db, schema: string): boolean {
  return (
    cachedStatement(db, `SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ?`).get(PROTECTED_TABLE) !==
    undefined
  );
}

/** A guarded table whose guards are not all as protect made them. */
export interface GuardFault {
  readonly table: string;
  /** Guard triggers not there (dropped by another program). */
  readonly missing: readonly string[];
  /** Guard triggers there under their name but on another table (its table renamed away, the triggers with it), by that table. */
  readonly elsewhere: readonly { readonly trigger: string; readonly on: string }[];
  /** Guard triggers on the table under their name whose SQL is not the guard's (made again by another program). */
  readonly altered: readonly string[];
}

/**
 * In a protected target: which of `tables` (projection `projection`'s) that
 * can carry triggers (plain tables) are not guarded as protect guards them:
 * a guard trigger missing, on another table, or with another SQL than the
 * one protect writes. Writes outside sluice to such a table may be accepted.
 * Reads only.
 */
export function guardFaults(db: Db, schema: string, projection: string, tables: readonly string[]): GuardFault[] {
  if (!isProtected(db, schema)) return [];
  const type = cachedStatement(db, `SELECT type FROM ${quoteIdent(schema)}.pragma_table_list WHERE name = ? COLLATE NOCASE`, 'pluck');
  return tables.flatMap((table) => {
    if (type.get(table) !== 'table') return [];
    const fault = faultOf(db, schema, projection, table);
    return fault.missing.length + fault.elsewhere.length + fault.altered.length === 0 ? [] : [fault];
  });
}

/** How the guards of `table` differ from protect's (every list empty: they do not). */
function faultOf(db: Db, schema: string, projection: string, table: string): GuardFault {
  const trigger = cachedStatement(db, `SELECT tbl_name, sql FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'trigger' AND name = ?`);
  const missing: string[] = [];
  const elsewhere: { trigger: string; on: string }[] = [];
  const altered: string[] = [];
  for (const suffix of SUFFIXES) {
    const name = guardName(table, suffix);
    const row = trigger.get(name) as { tbl_name: string; sql: string | null } | undefined;
    if (row === undefined) missing.push(name);
    else if (row.tbl_name.toLowerCase() !== table.toLowerCase()) elsewhere.push({ trigger: name, on: row.tbl_name });
    // SQLite stores a trigger's SQL as written from its name on (no schema, no IF NOT EXISTS).
    else if (row.sql !== `CREATE TRIGGER ${quoteIdent(name)} ${guardBody(projection, table, suffix)}`) altered.push(name);
  }
  return { table, missing, elsewhere, altered };
}

/**
 * Guards `table` of `projection` as protect does: drops its guard triggers
 * that are not as protect makes them (on another table, another SQL) and
 * makes those not there. In a write transaction.
 */
export function guardTable(db: Db, schema: string, projection: string, table: string): void {
  const fault = faultOf(db, schema, projection, table);
  const wrong = [...fault.elsewhere.map((e) => e.trigger), ...fault.altered];
  for (const name of wrong) db.exec(`DROP TRIGGER ${quoteIdent(schema)}.${quoteIdent(name)}`);
  const make = new Set([...wrong, ...fault.missing]);
  for (const suffix of SUFFIXES) {
    const name = guardName(table, suffix);
    if (make.has(name)) db.exec(`CREATE TRIGGER ${quoteIdent(schema)}.${quoteIdent(name)} ${guardBody(projection, table, suffix)}`);
  }
}

/**
 * The marks of tables found unguarded in a protected target (a guard
 * dropped or made again by another program) and guarded again by sluice
 * (protect, or sync's ensureGuards): writes outside sluice may have gone in
 * while they were, and guarding them again erased that sign, so the mark
 * keeps it until a verify of the projection compares its rows
 * (verify-record.ts clears it). health reports each one.
 */
export const UNGUARDED_TABLE = '_sluice_unguarded';

/** A table found unguarded: since when it may have been (the protection it lost was made then), and when sluice found it. */
export interface UnguardedMark {
  readonly projection: string;
  readonly table: string;
  readonly sinceMs: number;
  readonly foundMs: number;
}

function hasMarks(db: Db, schema: string): boolean {
  return (
    cachedStatement(db, `SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ?`).get(UNGUARDED_TABLE) !==
    undefined
  );
}

/** When the target was last protected (protect's marker), or undefined when it is not. */
function protectedSinceMs(db: Db, schema: string): number | undefined {
  if (!isProtected(db, schema)) return undefined;
  const ms = cachedStatement(db, `SELECT since_ms FROM ${quoteIdent(schema)}.${PROTECTED_TABLE} WHERE id = 1`, 'pluck').get();
  return ms === undefined ? undefined : Number(ms);
}

/**
 * In a write transaction: marks `table` of `projection` as found unguarded
 * now (an earlier mark of it is kept, with its earlier since).
 */
export function markUnguarded(db: Db, schema: string, projection: string, table: string): void {
  const now = Date.now();
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}.${UNGUARDED_TABLE} (projection TEXT NOT NULL, tbl TEXT NOT NULL, since_ms INTEGER NOT NULL, found_ms INTEGER NOT NULL, PRIMARY KEY (projection, tbl))`,
  );
  db.prepare(`INSERT OR IGNORE INTO ${quoteIdent(schema)}.${UNGUARDED_TABLE} VALUES (?, ?, ?, ?)`).run(
    projection,
    table,
    protectedSinceMs(db, schema) ?? now,
    now,
  );
}

/** The marks of projection `projection` (all projections' when undefined). Reads only. */
export function unguardedMarks(db: Db, schema: string, projection?: string): UnguardedMark[] {
  if (!hasMarks(db, schema)) return [];
  const rows = db
    .prepare(
      `SELECT projection, tbl, since_ms, found_ms FROM ${quoteIdent(schema)}.${UNGUARDED_TABLE} WHERE ? IS NULL OR projection = ? ORDER BY projection, tbl`,
    )
    .all(projection ?? null, projection ?? null) as {
    projection: string;
    tbl: string;
    since_ms: number | bigint;
    found_ms: number | bigint;
  }[];
  return rows.map((r) => ({ projection: r.projection, table: r.tbl, sinceMs: Number(r.since_ms), foundMs: Number(r.found_ms) }));
}

/** In a write transaction: forgets the marks of `projection` (a verify compared it); the table goes with the last one. */
export function clearUnguarded(db: Db, schema: string, projection: string): void {
  if (!hasMarks(db, schema)) return;
  db.prepare(`DELETE FROM ${quoteIdent(schema)}.${UNGUARDED_TABLE} WHERE projection = ?`).run(projection);
  if (db.prepare(`SELECT 1 FROM ${quoteIdent(schema)}.${UNGUARDED_TABLE} LIMIT 1`).get() === undefined)
    db.exec(`DROP TABLE ${quoteIdent(schema)}.${UNGUARDED_TABLE}`);
}
