import type { Db } from '../sqlite/index.ts';
import {
  STATE_TABLE,
  TABLES_TABLE,
  JOURNAL_TABLE,
  lastSeqSql,
  MASK_COLUMN,
  SCHEMA_TABLE,
  CAPTURE_MODES,
  type CaptureMode,
} from './schema.ts';
import { cachedStatement, connectionState, schemaVersion, slot, StoredRow, stringList } from '../sqlite/index.ts';

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
  /** The captured columns, in the order of the journal's images (the table's columns less `excluded`). */
  readonly columns: readonly string[];
  /**
   * Columns left out of capture: in no image, snapshot or target (enable's `exclude`). By name: a name
   * the table no longer has stays here, so that a column added again under it is left out too.
   */
  readonly excluded: readonly string[];
  /** The names in `excluded` the table did not have when it was armed (stored as `{"absent": name}`). */
  readonly excludedAbsent: readonly string[];
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
  return r === undefined ? undefined : stateFromRow(db, r);
}

/** Reads a `_sluice_state` row of `db` into a CaptureState (a value it does not read: StoredValueError). */
export function stateFromRow(db: Db, r: Record<string, unknown>): CaptureState {
  const row = new StoredRow(db, { role: 'Source', schema: 'main', table: STATE_TABLE, row: '1' }, r);
  const generation = row.whole('generation');
  return {
    format: row.whole('format'),
    sourceId: row.text('source_id'),
    generation,
    // Format 1 had no such column: every generation change counted as a bump.
    bumpedGeneration: row.raw('bumped_generation') === undefined ? generation : row.whole('bumped_generation'),
    retention: row.whole('retention'),
    prunedThrough: row.whole('pruned_through'),
    journalWidth: row.whole('journal_width'),
    createdMs: row.whole('created_ms'),
    updatedMs: row.whole('updated_ms'),
    lastReason: row.textOrNull('last_reason'),
  };
}

export function readTables(db: Db): CapturedTable[] {
  if (!hasCapture(db)) return [];
  const rows = cachedStatement(
    db,
    `SELECT t.*, ${lastSeqSql('t.tid')} AS last_seq FROM main.${TABLES_TABLE} t ORDER BY t.tid`,
  ).all() as Record<string, unknown>[];
  return rows.map((r) => tableFromRow(db, r));
}

/** Reads a `_sluice_tables` row (with its `last_seq`) into a CapturedTable (a value it does not read: StoredValueError). */
function tableFromRow(db: Db, r: Record<string, unknown>): CapturedTable {
  const row = new StoredRow(db, { role: 'Source', schema: 'main', table: TABLES_TABLE, row: String(r.name) }, r);
  const mode: CaptureMode = row.oneOf('mode', CAPTURE_MODES);
  return {
    tid: row.whole('tid'),
    name: row.text('name'),
    mode,
    columns: row.json('columns', stringList, 'a JSON array of column names'),
    // A table made before `excluded` (or one never given any) leaves nothing out.
    ...exclusionOf(row.jsonOrNull('excluded', excludedList, 'a JSON array of column names (or {"absent": name})')),
    keyColumns: row.json('key_columns', stringList, 'a JSON array of column names'),
    fingerprint: row.text('fingerprint'),
    lastSeq: row.whole('last_seq'),
    armedGeneration: row.whole('armed_generation'),
    armedSeq: row.whole('armed_seq'),
    triggers: {
      insert: row.text('insert_trigger'),
      update: row.text('update_trigger'),
      delete: row.text('delete_trigger'),
      beforeInsert: row.textOrNull('before_insert_trigger'),
      beforeUpdate: row.textOrNull('before_update_trigger'),
    },
  };
}

/** A stored excluded set: each name a string, or `{"absent": name}` for one the table did not have when armed. */
function excludedList(json: unknown): { name: string; absent: boolean }[] | undefined {
  if (!Array.isArray(json)) return undefined;
  const out: { name: string; absent: boolean }[] = [];
  for (const e of json as unknown[]) {
    if (typeof e === 'string') out.push({ name: e, absent: false });
    else if (typeof e === 'object' && e !== null && typeof (e as { absent?: unknown }).absent === 'string')
      out.push({ name: (e as { absent: string }).absent, absent: true });
    else return undefined;
  }
  return out;
}

function exclusionOf(
  list: readonly { name: string; absent: boolean }[] | null | undefined,
): Pick<CapturedTable, 'excluded' | 'excludedAbsent'> {
  return {
    excluded: (list ?? []).map((e) => e.name),
    excludedAbsent: (list ?? []).filter((e) => e.absent).map((e) => e.name),
  };
}

/** The highest seq ever assigned (0 when nothing was journaled yet). */
export function highWaterMark(db: Db): number {
  const r = cachedStatement(db, `SELECT max(seq) AS m FROM main.${JOURNAL_TABLE}`).get() as { m: bigint | null };
  const s = readState(db);
  return Math.max(r.m === null ? 0 : Number(r.m), s?.prunedThrough ?? 0);
}

/** The schema_version span of sluice's own last DDL transaction (undefined before the first, or on a format-1 source). */
export function readOwnDdl(db: Db): { readonly before: number; readonly after: number } | undefined {
  let r: Record<string, unknown> | undefined;
  try {
    r = cachedStatement(db, `SELECT before, after FROM main.${SCHEMA_TABLE} WHERE id = 1`).get() as Record<string, unknown> | undefined;
  } catch {
    return undefined; // no such table: a capture older than it
  }
  if (r === undefined) return undefined;
  const row = new StoredRow(db, { role: 'Source', schema: 'main', table: SCHEMA_TABLE, row: '1' }, r);
  return { before: row.whole('before'), after: row.whole('after') };
}

/**
 * Whether the journal has its changed-column mask column: false in a
 * format-2 capture that no enable or sync has upgraded yet, which readers
 * still read (every update then changed every column).
 */
export function journalHasMask(db: Db): boolean {
  // Read again only after DDL (a follower asks for every batch, and the table's columns cost more than the schema version).
  const sv = schemaVersion(db);
  const known = connectionState(db).get(maskKnown);
  if (known.sv === sv && known.has !== undefined) return known.has;
  const has =
    cachedStatement(db, `SELECT 1 FROM main.pragma_table_info('${JOURNAL_TABLE}') WHERE name = '${MASK_COLUMN}'`, 'pluck').get() !==
    undefined;
  known.sv = sv;
  known.has = has;
  return has;
}

/** journalHasMask's last answer on a connection, with the schema version it was read at. */
const maskKnown = slot('journal-mask', (): { sv?: number; has?: boolean } => ({}));
