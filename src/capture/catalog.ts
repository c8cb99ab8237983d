import type { Db } from '../sqlite/connection.ts';
import { STATE_TABLE, TABLES_TABLE, JOURNAL_TABLE, LAST_TABLE, SCHEMA_TABLE, type CaptureMode } from './schema.ts';
import { cachedStatement } from '../sqlite/statement-cache.ts';

/** The source-side capture state, as stored. */
export interface CaptureState {
  readonly format: number;
  readonly sourceId: string;
  readonly generation: number;
  /** The generation of the last bump (or creation, or format upgrade): a cursor older than it rebuilds, whatever its tables. */
  readonly bumpedGeneration: number;
  readonly retention: number;
  readonly prunedThrough: number;
  readonly journalWidth: number;
  readonly createdMs: number;
  readonly updatedMs: number;
  readonly lastReason: string | null;
}

export interface CapturedTable {
  readonly tid: number;
  readonly name: string;
  readonly mode: CaptureMode;
  readonly columns: readonly string[];
  readonly keyColumns: readonly string[];
  readonly fingerprint: string;
  readonly lastSeq: number;
  readonly armedGeneration: number;
  readonly armedSeq: number;
  readonly triggers: {
    readonly insert: string;
    readonly update: string;
    readonly delete: string;
    readonly beforeInsert: string | null;
    readonly beforeUpdate: string | null;
  };
}

export function hasCapture(db: Db): boolean {
  return cachedStatement(db, "SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = ?").get(STATE_TABLE) !== undefined;
}

export function readState(db: Db): CaptureState | undefined {
  if (!hasCapture(db)) return undefined;
  const r = cachedStatement(db, `SELECT * FROM main.${STATE_TABLE} WHERE id = 1`).get() as Record<string, unknown> | undefined;
  return r === undefined ? undefined : stateFromRow(r);
}

/** Maps a `_sluice_state` row to a CaptureState. */
export function stateFromRow(r: Record<string, unknown>): CaptureState {
  return {
    format: Number(r.format),
    sourceId: String(r.source_id),
    generation: Number(r.generation),
    // Format 1 had no such column: every generation change counted as a bump.
    bumpedGeneration: r.bumped_generation === undefined ? Number(r.generation) : Number(r.bumped_generation),
    retention: Number(r.retention),
    prunedThrough: Number(r.pruned_through),
    journalWidth: Number(r.journal_width),
    createdMs: Number(r.created_ms),
    updatedMs: Number(r.updated_ms),
    lastReason: r.last_reason === null ? null : String(r.last_reason),
  };
}

export function readTables(db: Db): CapturedTable[] {
  if (!hasCapture(db)) return [];
  const rows = cachedStatement(
    db,
    `SELECT t.*, coalesce(l.seq, 0) AS last_seq FROM main.${TABLES_TABLE} t LEFT JOIN main.${LAST_TABLE} l ON l.tid = t.tid ORDER BY t.tid`,
  ).all() as Record<string, unknown>[];
  return rows.map((r) => ({
    tid: Number(r.tid),
    name: String(r.name),
    mode: String(r.mode) as CaptureMode,
    columns: JSON.parse(String(r.columns)) as string[],
    keyColumns: JSON.parse(String(r.key_columns)) as string[],
    fingerprint: String(r.fingerprint),
    lastSeq: Number(r.last_seq),
    armedGeneration: Number(r.armed_generation),
    armedSeq: Number(r.armed_seq),
    triggers: {
      insert: String(r.insert_trigger),
      update: String(r.update_trigger),
      delete: String(r.delete_trigger),
      beforeInsert: r.before_insert_trigger === null ? null : String(r.before_insert_trigger),
      beforeUpdate: r.before_update_trigger === null ? null : String(r.before_update_trigger),
    },
  }));
}

/** The highest seq ever assigned (0 when nothing was journaled yet). */
export function highWaterMark(db: Db): number {
  const r = cachedStatement(db, `SELECT max(seq) AS m FROM main.${JOURNAL_TABLE}`).get() as { m: bigint | null };
  const s = readState(db);
  return Math.max(r.m === null ? 0 : Number(r.m), s?.prunedThrough ?? 0);
}

/** The schema_version span of sluice's own last DDL transaction (undefined before the first, or on a format-1 source). */
export function readOwnDdl(db: Db): { readonly before: number; readonly after: number } | undefined {
  try {
    const r = cachedStatement(db, `SELECT before, after FROM main.${SCHEMA_TABLE} WHERE id = 1`).get() as
      { before: bigint; after: bigint } | undefined;
    return r === undefined ? undefined : { before: Number(r.before), after: Number(r.after) };
  } catch {
    return undefined; // no such table: a capture older than it
  }
}
