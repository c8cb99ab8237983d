import type { Db } from '../../sqlite/index.ts';
import { quoteIdent } from '../../sqlite/index.ts';
import type { ProjectionRecord } from './target-meta.ts';
import { DROPPED_TABLE } from '../../capture/index.ts';

/*
 * What `sluice drop` removed from a target, one row per projection name,
 * until a sync of its source has forgotten the projection's acknowledgement
 * there. drop opens the target only (the source may be elsewhere, busy, or
 * gone, and drop writes no user's database but the target); the record
 * tells the next sync into this target that the projection it no longer
 * holds was dropped on purpose, so that sync deletes the acknowledgement
 * instead of reporting a projection the target lost (CONSUMER_NOT_BUILT).
 * A projection built again under the name clears the record.
 */

export { DROPPED_TABLE };

function hasTable(db: Db, schema: string): boolean {
  return db.prepare(`SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ?`).get(DROPPED_TABLE) !== undefined;
}

/** Records that `rec` was dropped, in the caller's (drop's) transaction. */
export function recordDrop(db: Db, schema: string, rec: Pick<ProjectionRecord, 'name' | 'sourceId' | 'sourcePath' | 'kind'>): void {
  const s = quoteIdent(schema);
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${s}.${DROPPED_TABLE} (name TEXT PRIMARY KEY, source_id TEXT NOT NULL, source_path TEXT, kind TEXT NOT NULL, dropped_ms INTEGER NOT NULL)`,
  );
  db.prepare(
    `INSERT INTO ${s}.${DROPPED_TABLE} (name, source_id, source_path, kind, dropped_ms) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET source_id = excluded.source_id, source_path = excluded.source_path, kind = excluded.kind, dropped_ms = excluded.dropped_ms`,
  ).run(rec.name, rec.sourceId, rec.sourcePath, rec.kind, Date.now());
}

/** The names of the projections dropped from the target whose acknowledgements a sync has not forgotten yet. */
export function droppedNames(db: Db, schema: string): Set<string> {
  if (!hasTable(db, schema)) return new Set();
  return new Set(
    db
      .prepare(`SELECT name FROM ${quoteIdent(schema)}.${DROPPED_TABLE}`)
      .pluck()
      .all() as string[],
  );
}

/** Deletes the records of `names` (their acknowledgements were forgotten, or they were built again), in the caller's transaction. */
export function clearDrops(db: Db, schema: string, names: Iterable<string>): void {
  if (!hasTable(db, schema)) return;
  const del = db.prepare(`DELETE FROM ${quoteIdent(schema)}.${DROPPED_TABLE} WHERE name = ?`);
  for (const n of names) del.run(n);
}
