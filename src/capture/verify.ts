import type { Db } from '../sqlite/connection.ts';
import { describeTable, findObjects, schemaVersion, uniqueIndexes } from '../sqlite/introspect.ts';
import { captureFingerprint } from './fingerprint.ts';
import { readState, readTables, type CaptureState, type CapturedTable } from './catalog.ts';
import { checkForeignKeyRules } from './fk-rules.ts';
import { reservedColumn } from './gates.ts';
import { FORMAT_VERSION, PRUNE_TRIGGER, metadataDdl, triggerNames } from './schema.ts';

/** Why a captured table is not armed. Stable codes: readers and `status` report them. */
export type UnarmedReason =
  | 'TABLE_MISSING'
  | 'NOT_A_TABLE'
  | 'TRIGGER_MISSING'
  | 'TRIGGER_ALTERED'
  | 'SCHEMA_CHANGED'
  | 'TEMP_SHADOW'
  | 'FK_UPDATE_CYCLE'
  | 'FK_DELETE_KEY_UPDATE'
  | 'PRUNE_TRIGGER_MISSING'
  | 'RESERVED_COLUMN_NAME';

export interface TableArming {
  readonly table: CapturedTable;
  readonly armed: boolean;
  readonly reason?: UnarmedReason;
  readonly detail?: string;
}

export type CaptureProblem = 'CAPTURE_ABSENT' | 'FORMAT_UNKNOWN';

export interface CaptureVerification {
  /** True when capture exists, its format is known and every captured table is armed. */
  readonly ok: boolean;
  readonly problem?: CaptureProblem;
  readonly state?: CaptureState;
  readonly tables: readonly TableArming[];
}

const cache = new WeakMap<Db, { schemaVersion: number; tables: readonly TableArming[] }>();

/**
 * Cheap check used by every reader: each captured table exists with the
 * fingerprint it was armed with, its three triggers are byte-identical to
 * what sluice installed, the prune trigger is intact, no TEMP object shadows
 * it, and the foreign-key boundaries still hold. Arming depends on the schema
 * only, so the result is reused while PRAGMA schema_version is unchanged.
 */
export function verifyCapture(db: Db): CaptureVerification {
  const state = readState(db);
  if (state === undefined) return { ok: false, problem: 'CAPTURE_ABSENT', tables: [] };
  if (state.format !== FORMAT_VERSION) return { ok: false, problem: 'FORMAT_UNKNOWN', state, tables: [] };
  const sv = schemaVersion(db);
  const hit = cache.get(db);
  let tables: readonly TableArming[];
  if (hit !== undefined && hit.schemaVersion === sv) {
    // Table rows (last_seq) change without DDL: refresh them, keep the arming.
    const fresh = new Map(readTables(db).map((t) => [t.tid, t]));
    tables = hit.tables.map((a) => ({ ...a, table: fresh.get(a.table.tid) ?? a.table }));
  } else {
    tables = checkArming(db, state);
    cache.set(db, { schemaVersion: sv, tables });
  }
  return { ok: tables.every((t) => t.armed), state, tables };
}

function checkArming(db: Db, state: CaptureState): TableArming[] {
  const triggerSql = new Map(
    (db.prepare("SELECT name, tbl_name AS tbl, sql FROM main.sqlite_schema WHERE type = 'trigger'").all() as { name: string; tbl: string; sql: string }[]).map((r) => [r.name, r]),
  );
  const expectedPrune = metadataDdl(state.journalWidth).at(-1);
  const pruneOk = triggerSql.get(PRUNE_TRIGGER)?.sql === expectedPrune;
  const captured = readTables(db);
  const fk = checkForeignKeyRules(db, captured.map((t) => t.name));
  return captured.map((table): TableArming => {
    const unarmed = (reason: UnarmedReason, detail: string): TableArming => ({ table, armed: false, reason, detail });
    if (!pruneOk) return unarmed('PRUNE_TRIGGER_MISSING', `the journal prune trigger ${PRUNE_TRIGGER} is missing or altered`);
    const objects = findObjects(db, table.name);
    const main = objects.find((o) => o.schema === 'main');
    if (main === undefined) return unarmed('TABLE_MISSING', `table ${table.name} no longer exists`);
    if (main.type !== 'table' || main.name !== table.name) return unarmed('NOT_A_TABLE', `${table.name} is now a ${main.type} named ${main.name}`);
    if (objects.some((o) => o.schema === 'temp')) return unarmed('TEMP_SHADOW', `a TEMP object shadows ${table.name}`);
    const info = describeTable(db, table.name);
    const reserved = info === undefined ? undefined : reservedColumn(info);
    if (reserved !== undefined) return unarmed('RESERVED_COLUMN_NAME', `column ${reserved.name} of ${table.name} starts with sluice's reserved prefix _sluice_; rename it, then enable the table again`);
    if (info === undefined || captureFingerprint(info, uniqueIndexes(db, table.name)) !== table.fingerprint) {
      return unarmed('SCHEMA_CHANGED', `the schema of ${table.name} changed since it was armed (ALTER TABLE or DROP/CREATE)`);
    }
    const names = triggerNames(table.tid);
    for (const op of ['insert', 'update', 'delete'] as const) {
      const t = triggerSql.get(names[op]);
      if (t === undefined) return unarmed('TRIGGER_MISSING', `trigger ${names[op]} is missing`);
      if (t.sql !== table.triggers[op] || t.tbl !== table.name) return unarmed('TRIGGER_ALTERED', `trigger ${names[op]} differs from what sluice installed`);
    }
    for (const op of ['beforeInsert', 'beforeUpdate'] as const) {
      const want = table.triggers[op];
      const t = triggerSql.get(names[op]);
      if (want === null && t === undefined) continue;
      if (t === undefined) return unarmed('TRIGGER_MISSING', `trigger ${names[op]} is missing`);
      if (t.sql !== want || t.tbl !== table.name) return unarmed('TRIGGER_ALTERED', `trigger ${names[op]} differs from what sluice installed`);
    }
    const v = fk.find((f) => f.table === table.name);
    if (v !== undefined) return unarmed(v.code, `foreign-key path ${v.path.join(' -> ')}`);
    return { table, armed: true };
  });
}

/** Forget cached arming for a connection (after DDL that sluice itself ran). */
export function forgetArming(db: Db): void {
  cache.delete(db);
}
