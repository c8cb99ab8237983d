import { z } from 'zod';
import type { Db } from '../sqlite/index.ts';
import { StoredRow } from '../sqlite/index.ts';
import { DDL_LINEAGE_COLUMN_DEF, DDL_TABLE, DDL_TABLE_SQL, LEGACY_DDL_TABLE_SQL } from './schema.ts';

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
  /**
   * For each of columnsAfter, the column of columnsBefore it is: the same
   * name, or the name a RENAME COLUMN of the script gave it; null for a new
   * column, which a name dropped and added again is (a name is not a
   * column). All null for a rebuilt table. Undefined in a row an older
   * sluice wrote (it recorded names only): then no column is known to be
   * the one it was, so each counts as dropped and added.
   */
  readonly columnsFrom?: readonly (string | null)[];
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

/**
 * Makes the log table if this source has none yet, and gives a log an older
 * sluice made its lineage column (in place, additively: its rows keep NULL
 * there), in an alter's transaction.
 */
export function ensureDdlLog(db: Db): void {
  db.exec(DDL_TABLE_SQL.replace('CREATE TABLE', 'CREATE TABLE IF NOT EXISTS'));
  const sql = db.prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?").pluck().get(DDL_TABLE);
  if (sql === LEGACY_DDL_TABLE_SQL) db.exec(`ALTER TABLE main.${DDL_TABLE} ADD COLUMN ${DDL_LINEAGE_COLUMN_DEF}`);
}

export function appendDdl(db: Db, r: Omit<DdlRecord, 'id'>, prunedThrough: number): void {
  // A cursor below the pruned horizon rebuilds anyway: older rows can no longer explain one.
  db.prepare(`DELETE FROM main.${DDL_TABLE} WHERE seq < ?`).run(prunedThrough);
  const tables = r.tables.map(({ columnsFrom: _, ...t }) => t);
  db.prepare(`INSERT INTO main.${DDL_TABLE} (seq, ms, sv_before, sv_after, tables, sql, lineage) VALUES (?, ?, ?, ?, ?, ?, ?)`).run(
    r.seq,
    r.ms,
    r.svBefore,
    r.svAfter,
    JSON.stringify(tables),
    r.sql,
    JSON.stringify(r.tables.map((t) => t.columnsFrom ?? null)),
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
  return rows.map((r) => {
    const row = new StoredRow(db, { role: 'Source', schema: 'main', table: DDL_TABLE, row: String(r.id) }, r);
    // No lineage column (a log no alter of this version has touched yet), or NULL: a row an older sluice wrote.
    const lineage = row.jsonOrNull('lineage', parsed(lineageSchema), 'a JSON array of column lineages, or NULL') ?? [];
    const tables = row.json('tables', parsed(tablesSchema), 'a JSON array of the tables an alter changed').map((t, i) => {
      const columnsFrom = lineage[i];
      return columnsFrom == null ? t : { ...t, columnsFrom };
    });
    return {
      id: row.whole('id'),
      seq: row.whole('seq'),
      ms: row.whole('ms'),
      svBefore: row.whole('sv_before'),
      svAfter: row.whole('sv_after'),
      tables,
      sql: row.text('sql'),
    };
  });
}

// What appendDdl writes: the tables without their lineage, and the lineage apart.
const tablesSchema = z.array(
  z.object({
    table: z.string(),
    tid: z.number().int(),
    change: z.enum(['altered', 'rebuilt', 'dropped']),
    from: z.string(),
    to: z.string().nullable(),
    columnsBefore: z.array(z.string()),
    columnsAfter: z.array(z.string()),
  }),
);
const lineageSchema = z.array(z.array(z.string().nullable()).nullable());

function parsed<T>(schema: z.ZodType<T>): (json: unknown) => T | undefined {
  return (json) => {
    const r = schema.safeParse(json);
    return r.success ? r.data : undefined;
  };
}
