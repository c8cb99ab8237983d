import type { Db } from '../../sqlite/index.ts';
import { foldIdent, quoteIdent, statementWrites, virtualTableObject } from '../../sqlite/index.ts';
import { kindNamed, ownedTables, useProjectionOwners } from '../../projection/index.ts';
import { readProjections } from './target-meta.ts';

/** A table of a projection that a statement writes. */
interface ProjectionWrite {
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

/** The virtual table object this connection holds for `table` of the target, if it is a virtual table. */
function vtabOf(db: Db, table: string): unknown {
  const isVirtual = db
    .prepare("SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE AND sql LIKE 'CREATE VIRTUAL%'")
    .get(table);
  return isVirtual === undefined ? undefined : virtualTableObject(db, `main.${quoteIdent(table)}`);
}
