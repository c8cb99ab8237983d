import type { Db } from '../sqlite/index.ts';
import {
  connectionState,
  slot,
  describeTable,
  expressionUniqueIndexes,
  findObjects,
  schemaVersion,
  triggerTiming,
  foldIdent,
  cachedStatement,
} from '../sqlite/index.ts';
import { captureFingerprint } from './table-fingerprint.ts';
import { readState, readTables, type CaptureState, type CapturedTable } from './catalog.ts';
import { checkForeignKeyRules } from './fk-rules.ts';
import { guardInputs } from './guard-inputs.ts';
import { buildTriggers, type TriggerOptions } from './triggers.ts';
import { armedTriggers, goneExclusionDetail, includableColumns, keptExclusion, suggestedExclusion } from './excluded.ts';
import {
  FORMAT_VERSION,
  LEGACY_PRUNE_TRIGGER_SQL,
  MARK_VIEW,
  MARK_VIEW_SQL,
  PRUNE_TRIGGER,
  TICK_TRIGGER,
  TICK_VIEW,
  TICK_VIEW_SQL,
  UPGRADABLE_FORMATS,
  isOwnTriggerName,
  tickDdl,
} from './schema.ts';
import { reservedColumn } from './gates.ts';
import { uniqueFromRowid, uniqueFromRowidDetail, uniqueFromRowidFix } from './unique-from-rowid.ts';
import { volatileDefault, volatileDefaultDetail, volatileDefaultFix } from './volatile-default.ts';
import type { Reason, ReasonOf } from '../reasons.ts';

/**
 * Why a captured table is not armed. Stable codes: readers and `status`
 * report them; src/reasons.ts explains each (kind `unarmed`, less
 * MODE_CHANGED, which only enable reports, and FORMAT_UNKNOWN, a CaptureProblem).
 */
export type UnarmedReason = Exclude<ReasonOf<'unarmed'>, 'MODE_CHANGED' | 'FORMAT_UNKNOWN'>;

export interface TableArming {
  readonly table: CapturedTable;
  readonly armed: boolean;
  readonly reason?: UnarmedReason;
  readonly detail?: string;
  /**
   * Unarmed because a column left out may have moved under another name
   * (keptExclusion): the columns enable should be told to leave out to arm
   * it again (`--exclude`), the fix every hint names.
   */
  readonly exclude?: readonly string[];
  /**
   * Held (with `exclude`) only by these columns, new since it was armed:
   * naming each one to enable, left out (`--exclude`) or captured
   * (`--include`), arms it again (includableColumns).
   */
  readonly newColumns?: readonly string[];
}

type CaptureProblem = Reason<'CAPTURE_ABSENT' | 'FORMAT_UNKNOWN'>;

export interface CaptureVerification {
  /** True when capture exists, its format is known and every captured table is armed. */
  readonly ok: boolean;
  readonly problem?: CaptureProblem;
  readonly state?: CaptureState;
  readonly tables: readonly TableArming[];
}

/** The last arming checked on a connection, with the schema_version it holds for. */
const lastArming = slot(
  'capture-arming',
  (): { last?: { readonly schemaVersion: number; readonly tables: readonly TableArming[] } } => ({}),
);

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
  if (state.format !== FORMAT_VERSION && !UPGRADABLE_FORMATS.includes(state.format))
    return { ok: false, problem: 'FORMAT_UNKNOWN', state, tables: [] };
  const sv = schemaVersion(db);
  const cache = connectionState(db).get(lastArming);
  const hit = cache.last;
  let tables: readonly TableArming[];
  if (hit !== undefined && hit.schemaVersion === sv) {
    // Table rows (last_seq) change without DDL: refresh them, keep the arming.
    const fresh = new Map(readTables(db).map((t) => [t.tid, t]));
    tables = hit.tables.map((a) => ({ ...a, table: fresh.get(a.table.tid) ?? a.table }));
  } else {
    // A capture of format 2, 3 or 4 (not upgraded yet) is read as it is: armed when its triggers are that format's
    // (format 2: events without masks; 2 and 3: `_sluice_last` exact, no checkpoint row; 4: the flush in the flush triggers).
    tables = checkArming(db, state, legacyOptions(state.format));
    cache.last = { schemaVersion: sv, tables };
  }
  return { ok: tables.every((t) => t.armed), state, tables };
}

interface SchemaRow {
  readonly rowid: number;
  readonly type: string;
  readonly name: string;
  readonly tbl: string;
  readonly sql: string | null;
}

/** How the capture triggers of an older format that is read as it is were built (format 1 is not: its tables re-arm). */
function legacyOptions(format: number): TriggerOptions {
  if (format === 2) return { mask: false, legacy: true, inlineFlush: true };
  if (format === 3) return { legacy: true, inlineFlush: true };
  if (format === 4) return { inlineFlush: true };
  return {};
}

/**
 * The tables of a format-2, 3 or 4 capture that are armed as that
 * format armed them: the upgrade replaces their triggers in place, and
 * their readers keep their cursors.
 */
export function armedAsLegacy(db: Db, state: CaptureState): CapturedTable[] {
  return checkArming(db, state, legacyOptions(state.format))
    .filter((a) => a.armed)
    .map((a) => a.table);
}

function checkArming(db: Db, state: CaptureState, options: TriggerOptions = {}): TableArming[] {
  const rows = (
    cachedStatement(db, 'SELECT rowid, type, name, tbl_name AS tbl, sql FROM main.sqlite_schema').all() as {
      rowid: bigint;
      type: string;
      name: string;
      tbl: string;
      sql: string | null;
    }[]
  ).map((r): SchemaRow => ({ ...r, rowid: Number(r.rowid) }));
  const triggerSql = new Map(rows.filter((r) => r.type === 'trigger').map((r) => [r.name, r]));
  const legacy = options.legacy === true;
  // Formats 2 to 4 are read as they are (their flush is inline); format 1 is not.
  const readAsIs = options.inlineFlush === true;
  const [, tickSql, pruneSql] = tickDdl();
  const pruneOk = legacy
    ? triggerSql.get(PRUNE_TRIGGER)?.sql === LEGACY_PRUNE_TRIGGER_SQL
    : triggerSql.get(PRUNE_TRIGGER)?.sql === pruneSql &&
      triggerSql.get(TICK_TRIGGER)?.sql === tickSql &&
      rows.some((r) => r.type === 'view' && r.name === TICK_VIEW && r.sql === TICK_VIEW_SQL);
  const mark = rows.find((r) => r.type === 'view' && r.name === MARK_VIEW && r.sql === MARK_VIEW_SQL);
  const captured = readTables(db);
  const fk = checkForeignKeyRules(
    db,
    captured.map((t) => t.name),
  );
  return captured.map((table): TableArming => {
    const unarmed = (reason: UnarmedReason, detail: string): TableArming => ({ table, armed: false, reason, detail });
    if (state.format !== FORMAT_VERSION && !readAsIs)
      return unarmed(
        'CAPTURE_OUTDATED',
        `capture was installed by an older sluice (format ${state.format}); run sluice enable to upgrade it`,
      );
    if (!pruneOk)
      return unarmed(
        'PRUNE_TRIGGER_MISSING',
        legacy
          ? `the journal prune trigger ${PRUNE_TRIGGER} is missing or altered`
          : `the journal's tick (${PRUNE_TRIGGER}, ${TICK_VIEW}, ${TICK_TRIGGER}) is missing or altered`,
      );
    const objects = findObjects(db, table.name);
    const main = objects.find((o) => o.schema === 'main');
    if (main === undefined) return unarmed('TABLE_MISSING', `table ${table.name} no longer exists`);
    if (main.type !== 'table' || main.name !== table.name)
      return unarmed('NOT_A_TABLE', `${table.name} is now a ${main.type} named ${main.name}`);
    if (objects.some((o) => o.schema === 'temp')) return unarmed('TEMP_SHADOW', `a TEMP object shadows ${table.name}`);
    const expression = expressionUniqueIndexes(db, table.name)[0];
    if (expression !== undefined)
      return unarmed(
        'UNIQUE_EXPRESSION_INDEX',
        `the UNIQUE index ${expression} on ${table.name} is over an expression, so a REPLACE through it deletes rows capture cannot see`,
      );
    const info = describeTable(db, table.name);
    const reserved = info === undefined ? undefined : reservedColumn(info);
    if (reserved !== undefined)
      return unarmed(
        'RESERVED_COLUMN_NAME',
        `column ${reserved.name} of ${table.name} starts with sluice's reserved prefix _sluice_; rename it, then enable the table again`,
      );
    const inputs = guardInputs(db, table.name);
    const fromRowid = info === undefined ? undefined : uniqueFromRowid(info, inputs.uniques);
    if (fromRowid !== undefined)
      return unarmed(
        fromRowid.code,
        `table ${table.name}: ${uniqueFromRowidDetail(table.name, fromRowid)}; to arm it again, ${uniqueFromRowidFix(table.name, fromRowid)}`,
      );
    const volatile = info === undefined ? undefined : volatileDefault(db, info, inputs.uniques);
    if (volatile !== undefined)
      return unarmed(
        'UNIQUE_VOLATILE_DEFAULT',
        `table ${table.name}: ${volatileDefaultDetail(table.name, volatile)}; to arm it again, ${volatileDefaultFix(table.name, volatile)}`,
      );
    const changed = info === undefined || captureFingerprint(info, inputs.uniques) !== table.fingerprint;
    // A column left out that may have moved under another name (even with the shape as armed: the table made again): enable must be told the set.
    const triggers = info !== undefined && table.excluded.length > 0 ? armedTriggers(db, table) : undefined;
    if (
      info !== undefined &&
      triggers !== undefined &&
      (changed || triggers === 'gone') &&
      keptExclusion(table, info, triggers) === undefined
    ) {
      const fresh = includableColumns(table, info, triggers);
      return {
        ...unarmed('SCHEMA_CHANGED', goneExclusionDetail(table, info, db.name, triggers)),
        exclude: suggestedExclusion(table, info, triggers),
        ...(fresh === undefined ? {} : { newColumns: fresh }),
      };
    }
    if (changed) {
      return unarmed('SCHEMA_CHANGED', `the schema of ${table.name} changed since it was armed (ALTER TABLE or DROP/CREATE)`);
    }
    const expected = buildTriggers(table.tid, info, table.mode, inputs, { ...options, excluded: table.excluded }).all;
    for (const spec of expected) {
      const t = triggerSql.get(spec.name);
      if (t === undefined) return unarmed('TRIGGER_MISSING', `trigger ${spec.name} is missing`);
      if (t.sql === spec.sql && t.tbl === spec.on) continue;
      const recorded = spec.role in table.triggers ? table.triggers[spec.role as keyof CapturedTable['triggers']] : undefined;
      if (t.sql === recorded)
        return unarmed(
          'CAPTURE_OUTDATED',
          `trigger ${spec.name} was installed by an older sluice; run sluice enable to re-arm ${table.name}`,
        );
      return unarmed('TRIGGER_ALTERED', `trigger ${spec.name} differs from what sluice installed`);
    }
    // Leftovers of another shape (guards of a mode since changed) would write stale notes.
    const names = new Set(expected.map((t) => t.name));
    const prefix = `_sluice_t${table.tid}_`;
    const stray = [...triggerSql.values()].find((t) => t.name.startsWith(prefix) && isOwnTriggerName(t.name) && !names.has(t.name));
    if (stray !== undefined) return unarmed('TRIGGER_ALTERED', `trigger ${stray.name} is not one sluice installs for ${table.name} now`);
    // Order: sluice's triggers and the table itself must be older than the
    // mark made after arming. One made again later (even with the same SQL)
    // is newer, and writes may have gone unrecorded while it was missing.
    const own = expected.map((t) => triggerSql.get(t.name) as SchemaRow);
    const tableRow = rows.find((r) => r.type === 'table' && r.name === table.name);
    if (mark === undefined)
      return unarmed(
        'CAPTURE_INTERRUPTED',
        `sluice's order mark ${MARK_VIEW} is missing or altered, so it cannot tell whether the triggers of ${table.name} stayed in place`,
      );
    const late = [...own, ...(tableRow === undefined ? [] : [tableRow])].find((r) => r.rowid > mark.rowid);
    if (late !== undefined) {
      return unarmed(
        'CAPTURE_INTERRUPTED',
        late.type === 'table'
          ? `table ${table.name} was made again after sluice armed it (a table rebuild), so writes in between may be unrecorded`
          : `trigger ${late.name} was dropped and made again after sluice armed ${table.name}, so writes in between may be unrecorded`,
      );
    }
    // SQLite fires a table's triggers newest first: a user AFTER trigger
    // newer than sluice's fires before them, and a write it makes to the
    // same row would be journaled ahead of the change that caused it.
    const oldestOwnAfter = Math.min(
      ...own.filter((r) => r.tbl === table.name && triggerTiming(r.sql ?? '') === 'AFTER').map((r) => r.rowid),
    );
    const user = [...triggerSql.values()].find(
      (t) =>
        !isOwnTriggerName(t.name) &&
        foldIdent(t.tbl) === foldIdent(table.name) &&
        t.rowid > oldestOwnAfter &&
        triggerTiming(t.sql ?? '') !== 'BEFORE',
    );
    if (user !== undefined)
      return unarmed(
        'USER_TRIGGER_NEWER',
        `trigger ${user.name} on ${table.name} was created after sluice's capture triggers, so it fires before them; run sluice enable to re-arm ${table.name} (sluice's triggers then fire first)`,
      );
    const v = fk.find((f) => f.table === table.name);
    if (v !== undefined) return unarmed(v.code, `foreign-key path ${v.path.join(' -> ')}`);
    return { table, armed: true };
  });
}

/** Forget cached arming for a connection (after DDL that sluice itself ran). */
export function forgetArming(db: Db): void {
  connectionState(db).delete(lastArming);
}
