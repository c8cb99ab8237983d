import fs from 'node:fs';
import { openDatabase, type Db, quoteIdent, cachedStatement, writeTransactionSync } from '../../sqlite/index.ts';
import { InvalidInputError } from '../../errors.ts';
import { ownedBy } from '../projections/index.ts';
import {
  allowProjectionWrites,
  GUARD_PREFIX,
  guardFaults,
  guardTable,
  isProtected,
  markUnguarded,
  PROTECTED_TABLE,
  hasTargetMeta,
  readProjection,
  readProjections,
  type ProjectionRecord,
} from '../target/index.ts';

/*
 * `sluice protect TGT`: the opt-in guard of a target's projections against
 * hand edits (docs/projections.md, "Hand edits of a target"). Each table of
 * a projection that can carry a trigger gets BEFORE INSERT, UPDATE and
 * DELETE triggers whose WHEN calls sluice_protect(), a function only
 * sluice's own connections define (allowProjectionWrites): on any other
 * connection a write to the table fails to prepare ("no such function:
 * sluice_protect"), on sluice's the function returns 1 and the trigger does
 * nothing, at the cost of a trigger program and a function call per row
 * (bench/apply.ts). The marker table says the target is protected, so that
 * sync makes the triggers again on tables it rebuilds (ensureGuards).
 */

export interface ProtectReport {
  readonly protected: boolean;
  /** The tables guarded now (after `--off`: none). */
  readonly tables: readonly { readonly projection: string; readonly table: string }[];
  /** Tables of projections that cannot be guarded, and why (an fts5 index; a projection never built). */
  readonly unguarded: readonly { readonly projection: string; readonly table: string; readonly why: string }[];
  /**
   * Tables of the protected target that protect found unguarded (a guard
   * trigger dropped, moved or made again by another program) and guarded
   * again: writes outside sluice may have gone in. Each is marked in the
   * target, and health reports it until `sluice verify` compares the projection.
   */
  readonly wasUnguarded: readonly { readonly projection: string; readonly table: string }[];
}

/**
 * Protects the target's projections (`on`), or takes the protection off:
 * the marker and the triggers, in one write transaction.
 *
 * @example
 * protect('cache.db', true); // sqlite3 cache.db "UPDATE issues SET ..." now fails: no such function: sluice_protect
 */
export function protect(targetPath: string, on: boolean): ProtectReport {
  if (!fs.existsSync(targetPath))
    throw new InvalidInputError('DB_NOT_FOUND', `Target ${targetPath} does not exist. Pass a target written by \`sluice sync\`.`);
  const db = openDatabase(targetPath, { role: 'target' });
  try {
    if (!hasTargetMeta(db, 'main'))
      throw new InvalidInputError(
        'NOT_A_TARGET',
        `${targetPath} is not a sluice target (no _sluice_projections table): there is nothing to protect. Pass a target written by \`sluice sync\`.`,
      );
    allowProjectionWrites(db);
    return writeTransactionSync(
      db,
      () => {
        // Found unguarded while the target was protected: protect cannot compare them with the source (it takes only
        // the target), so a mark keeps the sign that guarding them again would erase (protect-guards.ts).
        const wasUnguarded = readProjections(db, 'main').flatMap((rec) =>
          guardFaults(db, 'main', rec.name, ownedBy(rec)).map((g) => ({ projection: rec.name, table: g.table })),
        );
        for (const u of wasUnguarded) markUnguarded(db, 'main', u.projection, u.table);
        for (const name of triggerNames(db, 'main')) db.exec(`DROP TRIGGER main.${quoteIdent(name)}`);
        db.exec(`DROP TABLE IF EXISTS main.${PROTECTED_TABLE}`);
        const tables: { projection: string; table: string }[] = [];
        const unguarded: { projection: string; table: string; why: string }[] = [];
        if (on) {
          db.exec(`CREATE TABLE main.${PROTECTED_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), since_ms INTEGER NOT NULL)`);
          db.prepare(`INSERT INTO main.${PROTECTED_TABLE} VALUES (1, ?)`).run(Date.now());
          for (const rec of readProjections(db, 'main')) {
            const g = guardable(db, 'main', rec);
            for (const table of g.tables) {
              guardTable(db, 'main', rec.name, table);
              tables.push({ projection: rec.name, table });
            }
            unguarded.push(...g.not.map((x) => ({ projection: rec.name, ...x })));
          }
        }
        return { protected: on, tables, unguarded, wasUnguarded };
      },
      { mode: 'immediate' },
    );
  } finally {
    db.close();
  }
}

/**
 * In a sync transaction about to commit: when the target is protected, the
 * guards of projection `name`'s tables are made where missing (a rebuild
 * made its tables anew; a custom handler made its declared ones) or not as
 * protect makes them (on another table, made again by another program).
 */
export function ensureGuards(db: Db, schema: string, name: string, foundUnguarded: readonly string[] = []): void {
  if (!isProtected(db, schema)) return;
  const rec = readProjection(db, schema, name);
  if (rec === undefined) return;
  const tables = guardable(db, schema, rec).tables;
  // Tables that were unguarded before this step wrote (not made by it): edits may have gone in (protect-guards.ts).
  for (const t of foundUnguarded)
    if (tables.some((x) => x.toLowerCase() === t.toLowerCase()) && guardFaults(db, schema, rec.name, [t]).length > 0)
      markUnguarded(db, schema, rec.name, t);
  for (const table of tables) guardTable(db, schema, rec.name, table);
}

/**
 * At the start of a sync step (write lock held, nothing written yet): the
 * tables of projection `name` a protected target holds unguarded, which
 * ensureGuards marks when it guards them again.
 */
export function unguardedTables(db: Db, schema: string, name: string): string[] {
  if (!isProtected(db, schema)) return [];
  const rec = readProjection(db, schema, name);
  if (rec === undefined) return [];
  return guardFaults(db, schema, rec.name, ownedBy(rec)).map((g) => g.table);
}

/** The tables of a projection that can carry triggers (plain tables that exist), and the others with why. */
function guardable(db: Db, schema: string, rec: ProjectionRecord): { tables: string[]; not: { table: string; why: string }[] } {
  const tables: string[] = [];
  const not: { table: string; why: string }[] = [];
  if (rec.cursor === null) return { tables, not: [{ table: rec.targetTable, why: 'never built: it is guarded once a sync builds it' }] };
  for (const t of ownedBy(rec)) {
    const type = cachedStatement(db, `SELECT type FROM ${quoteIdent(schema)}.pragma_table_list WHERE name = ? COLLATE NOCASE`, 'pluck').get(
      t,
    );
    if (type === 'table') tables.push(t);
    else if (type === 'virtual')
      not.push({ table: t, why: 'an FTS5 index is a virtual table, which cannot carry triggers: a running sync --follow finds its edits' });
    else not.push({ table: t, why: 'not made yet (a custom handler makes its declared tables): guarded at the next sync that finds it' });
  }
  return { tables, not };
}

function triggerNames(db: Db, schema: string): string[] {
  return db
    .prepare(`SELECT name FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'trigger' AND substr(name, 1, ?) = ?`)
    .pluck()
    .all(GUARD_PREFIX.length, GUARD_PREFIX) as string[];
}
