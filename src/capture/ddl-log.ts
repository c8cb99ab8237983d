import type { Db } from '../sqlite/connection.ts';
import { DDL_TABLE, DDL_TABLE_SQL } from './schema.ts';

/**
 * What `sluice alter` did to one captured table:
 * - `altered`: changed in place (ADD/DROP/RENAME COLUMN, an index): the
 *   same rows, so a reader whose definition does not use what changed can
 *   go on once it has applied the events before the alter;
 * - `rebuilt`: the name was dropped or renamed away and made again (the
 *   12-step procedure): a new identity, whose readers rebuild (its armed
 *   generation moves, TABLE_REARMED);
 * - `dropped`: gone; it stays in capture, unarmed (TABLE_MISSING).
 */
export type TableChange = 'altered' | 'rebuilt' | 'dropped';

export interface DdlTableRecord {
  readonly table: string;
  readonly tid: number;
  readonly change: TableChange;
  /** The capture fingerprint before and after (null when dropped). */
  readonly from: string;
  readonly to: string | null;
  readonly columnsBefore: readonly string[];
  readonly columnsAfter: readonly string[];
}

export interface DdlRecord {
  readonly id: number;
  /** The journal's high-water mark when the alter ran: events of its tables up to it are in the old layout. */
  readonly seq: number;
  readonly ms: number;
  readonly svBefore: number;
  readonly svAfter: number;
  readonly tables: readonly DdlTableRecord[];
  readonly sql: string;
}

/** Makes the log table if this source has none yet (an alter's transaction). */
export function ensureDdlLog(db: Db): void {
  db.exec(DDL_TABLE_SQL.replace('CREATE TABLE', 'CREATE TABLE IF NOT EXISTS'));
}

export function appendDdl(db: Db, r: Omit<DdlRecord, 'id'>, prunedThrough: number): void {
  // A cursor below the pruned horizon rebuilds anyway: older rows can no longer explain one.
  db.prepare(`DELETE FROM main.${DDL_TABLE} WHERE seq < ?`).run(prunedThrough);
  db.prepare(`INSERT INTO main.${DDL_TABLE} (seq, ms, sv_before, sv_after, tables, sql) VALUES (?, ?, ?, ?, ?, ?)`).run(
    r.seq,
    r.ms,
    r.svBefore,
    r.svAfter,
    JSON.stringify(r.tables),
    r.sql,
  );
}

/** The alters recorded at or after `seq`, oldest first ([] on a source that never ran one). */
export function readDdlLog(db: Db, seq = 0): DdlRecord[] {
  let rows: Record<string, unknown>[];
  try {
    rows = db.prepare(`SELECT * FROM main.${DDL_TABLE} WHERE seq >= ? ORDER BY id`).all(seq) as Record<string, unknown>[];
  } catch {
    return []; // no such table: no alter ran here
  }
  return rows.map((r) => ({
    id: Number(r.id),
    seq: Number(r.seq),
    ms: Number(r.ms),
    svBefore: Number(r.sv_before),
    svAfter: Number(r.sv_after),
    tables: JSON.parse(String(r.tables)) as DdlTableRecord[],
    sql: String(r.sql),
  }));
}
