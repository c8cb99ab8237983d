import type { Db } from '../../sqlite/index.ts';
import {
  schemaVersion,
  connectionState,
  foldIdent,
  quoteIdent,
  shellWord,
  slot,
  statementWrites,
  triggerWrites,
  virtualTableObject,
} from '../../sqlite/index.ts';
import { kindNamed, ownedTables, useProjectionOwners } from '../../projection/index.ts';
import { readProjections } from './target-meta.ts';
import { GUARD_PREFIX } from './protect-guards.ts';

/** A table of a projection that a statement writes. */
export interface ProjectionWrite {
  readonly projection: string;
  readonly table: string;
}

/**
 * The tables of the target's projections (as `main` on `db`) that the
 * statement `sql` writes, read from its program (statementWrites): each
 * b-tree it opens for writing, empties (a DELETE with no WHERE) or
 * destroys (a table, or one of its indexes), and each virtual table it
 * updates (an fts5 index, known by the virtual table object this
 * connection made for it). EXPLAIN lists the programs of the triggers the
 * statement fires after its own, so a user's trigger that writes a
 * projection's table is named too. Empty when `db` is not a sluice target,
 * or `sql` does not compile (its own run says why).
 */
export function projectionWrites(db: Db, sql: string): ProjectionWrite[] {
  const owners = projectionOwners(db, 'main');
  if (owners.size === 0) return [];
  const writes = statementWrites(db, sql, { triggers: true });
  if (writes === undefined) return [];
  const written = new Set(writes.tables.map(foldIdent));
  for (const p4 of writes.vtabs) for (const [key, w] of owners) if (vtabOf(db, w.table) === p4) written.add(key);
  return [...written].flatMap((t) => {
    const w = owners.get(t);
    return w === undefined ? [] : [w];
  });
}

/** The tables the projections of the target attached as `schema` own (their own, and the tables their UNIQUE constraints live in), by name folded (foldIdent). */
export function projectionOwners(db: Db, schema: string): Map<string, ProjectionWrite> {
  const owners = new Map<string, ProjectionWrite>();
  for (const r of readProjections(db, schema)) {
    const kind = kindNamed(r.kind);
    const tables = [...ownedTables(r), ...(kind?.uniqueTables(r.targetTable) ?? [])];
    for (const t of tables) owners.set(foldIdent(t), { projection: r.name, table: t });
  }
  return owners;
}

/**
 * Tells the guard of the custom handlers that run on `db` (sync's session,
 * import's and subscribe's connection) which tables each projection of the
 * target owns, so that a handler's statement that writes another
 * projection's table is refused (CUSTOM_WROTE_PROJECTION).
 */
export function guardProjectionTables(db: Db): void {
  useProjectionOwners(db, (d, schema) => new Map([...projectionOwners(d, schema)].map(([table, w]) => [table, w.projection])));
}

/** The virtual table object this connection holds for `table` of the target (attached as `schema`), if it is a virtual table. */
function vtabOf(db: Db, table: string, schema = 'main'): unknown {
  const isVirtual = db
    .prepare(
      `SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE AND sql LIKE 'CREATE VIRTUAL%'`,
    )
    .get(table);
  return isVirtual === undefined ? undefined : virtualTableObject(db, `${quoteIdent(schema)}.${quoteIdent(table)}`);
}

/*
 * A user's trigger on a projection's table fires inside sync's own
 * connection and transaction (and import's, and subscribe's): protect's
 * guards let sluice's connection through, and the hand-edit watch takes
 * that commit for sluice's own. So one whose program writes ANOTHER
 * projection's table (or sluice's own tables, `_sluice_...`: cursors,
 * definitions) would change that projection behind sluice's back, where
 * nothing but verify finds it. The one rule, for sync, import and
 * subscribe (before each batch: apply/sync/batch-path.ts), health and
 * `sluice query`: such a trigger is found by compiling, never running, an
 * INSERT, an UPDATE of every column and a DELETE on each projection table
 * that carries a user's trigger, and reading from their programs what each
 * trigger they fire writes (statement-writes.ts triggerWrites: a trigger
 * fired by another trigger's write, on a user's own table, included). A
 * write to the projection's own tables is not one: a custom handler's init
 * may make triggers that keep its declared tables together, and a mirror's
 * or map's rows changed so are found by the before-image checks and by
 * verify. All three statements are compiled whatever sluice's writes are:
 * a mirror or a map applies an update as a delete and an insert, but an
 * fts5 index updates its key table in place, and a custom handler writes
 * as it chooses.
 *
 * A follower asks before each batch, so the answer is kept per connection
 * and schema while the schema's schema_version is unchanged (making or
 * dropping a trigger or a table changes it): then the cost is one PRAGMA.
 */

/** A user's trigger that a write to a projection's table fires and whose program writes another projection's table, or sluice's own. */
export interface TriggerWrite {
  /** The trigger whose program writes `table`. */
  readonly trigger: string;
  /** The table it is on: `fired.table`, or a user's table that another trigger fired by a write to `fired.table` writes. */
  readonly on: string;
  /** The projection table whose write fires it, and its projection: the projection sluice does not apply while it is there. */
  readonly fired: ProjectionWrite;
  /** The table it writes. */
  readonly table: string;
  /** The projection that owns `table`; null: it is sluice's own (`_sluice_...`). */
  readonly projection: string | null;
}

const triggerAnswers = slot('user-trigger-writes', () => new Map<string, { version: number; writes: readonly TriggerWrite[] }>());

/** The user's triggers of the target attached as `schema` that write another projection's table, or sluice's own, when a projection's table is written. */
export function userTriggerWrites(db: Db, schema: string): readonly TriggerWrite[] {
  const version = schemaVersion(db, schema);
  const all = connectionState(db).get(triggerAnswers);
  const at = all.get(schema);
  if (at !== undefined && at.version === version) return at.writes;
  const writes = findTriggerWrites(db, schema);
  all.set(schema, { version, writes });
  return writes;
}

/** The first trigger that a write to a table of projection `projection` fires and that writes another projection's table or sluice's own (userTriggerWrites). */
export function userTriggerWriteOf(db: Db, schema: string, projection: string): TriggerWrite | undefined {
  return userTriggerWrites(db, schema).find((w) => w.fired.projection === projection);
}

function findTriggerWrites(db: Db, schema: string): TriggerWrite[] {
  const s = quoteIdent(schema);
  const owners = projectionOwners(db, schema);
  if (owners.size === 0) return [];
  const triggers = (
    db.prepare(`SELECT name, tbl_name FROM ${s}.sqlite_schema WHERE type = 'trigger'`).raw().all() as [string, string][]
  ).filter(([name]) => !name.startsWith(GUARD_PREFIX));
  const firing = [...new Set(triggers.map(([, on]) => foldIdent(on)))].flatMap((t) => owners.get(t) ?? []);
  if (firing.length === 0) return [];
  const onOf = new Map(triggers.map(([name, on]) => [foldIdent(name), on]));
  const vtabs = [...owners.values()].flatMap((w) => {
    const v = vtabOf(db, w.table, schema);
    return v === undefined ? [] : [{ v, w }];
  });
  const found = new Map<string, TriggerWrite>();
  for (const fired of firing) {
    const table = `${s}.${quoteIdent(fired.table)}`;
    const columns = db
      .prepare('SELECT name FROM pragma_table_xinfo(?, ?) WHERE hidden = 0 ORDER BY cid')
      .pluck()
      .all(fired.table, schema) as string[];
    const statements = [
      `INSERT INTO ${table} DEFAULT VALUES`,
      ...(columns.length === 0 ? [] : [`UPDATE ${table} SET ${columns.map((c) => `${quoteIdent(c)} = ${quoteIdent(c)}`).join(', ')}`]),
      `DELETE FROM ${table}`,
    ];
    for (const sql of statements)
      for (const tw of triggerWrites(db, sql, schema) ?? []) {
        const written = [...tw.tables, ...tw.vtabs.flatMap((p4) => vtabs.filter((x) => x.v === p4).map((x) => x.w.table))];
        for (const w of written) {
          const owner = owners.get(foldIdent(w));
          const own = owner === undefined && w.toLowerCase().startsWith('_sluice_');
          if ((owner === undefined || owner.projection === fired.projection) && !own) continue;
          const key = [fired.projection, tw.trigger, foldIdent(w)].join('\0');
          if (!found.has(key))
            found.set(key, {
              trigger: tw.trigger,
              on: onOf.get(foldIdent(tw.trigger)) ?? fired.table,
              fired,
              table: owner?.table ?? w,
              projection: owner?.projection ?? null,
            });
        }
      }
  }
  return [...found.values()];
}

/** What trigger write `w` is, in words: the trigger, the table it is on, and what it writes. */
export function triggerWriteText(w: TriggerWrite): string {
  const on =
    foldIdent(w.on) === foldIdent(w.fired.table)
      ? `trigger ${w.trigger} on table ${w.on}`
      : `trigger ${w.trigger} on table ${w.on} (which another trigger writes when table ${w.fired.table} is written)`;
  const what = w.projection === null ? `table ${w.table}, sluice's own` : `table ${w.table} of projection ${w.projection}`;
  return `${on} writes ${what}`;
}

/** The fix of trigger write `w`: drop the trigger, or make it write a table that is no projection's. */
export function triggerWriteFix(w: TriggerWrite, target: string): string {
  return `drop the trigger (sluice query ${shellWord(target)} ${shellWord(`DROP TRIGGER ${quoteIdent(w.trigger)}`)}) or make it write only tables that are no projection's`;
}
