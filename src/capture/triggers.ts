import { affinityOf, anyOf, quoteIdent, quoteString } from '../sqlite/index.ts';
import type { TableInfo } from '../sqlite/index.ts';
import { capturedColumns } from './excluded.ts';
import { maskSql } from './mask.ts';
import { replaceGuards, type GuardInputs } from './replace-guards.ts';
import {
  FLUSH_VIEW,
  JOURNAL_TABLE,
  MASK_COLUMN,
  LAST_TABLE,
  OP_DELETE,
  OP_INSERT,
  OP_UPDATE,
  journalColumn,
  triggerNames,
  type CaptureMode,
  type TriggerNames,
} from './schema.ts';

/** One trigger sluice installs on a captured table. */
interface TriggerSpec {
  readonly role: keyof TriggerNames;
  readonly name: string;
  readonly sql: string;
  /** What the trigger is on: the captured table, or the view `_sluice_flush` (flushPending). */
  readonly on: string;
}

/**
 * A table's triggers in creation order. SQLite fires the triggers of one
 * event newest first, so the order is part of the design: the flush
 * triggers are made after the capture triggers and fire before them (the
 * rows a REPLACE deleted are journaled ahead of the write itself).
 */
interface TriggerSet {
  readonly all: readonly TriggerSpec[];
  readonly insert: string;
  readonly update: string;
  readonly delete: string;
  readonly beforeInsert: string | null;
  readonly beforeUpdate: string | null;
}

export type { GuardInputs } from './replace-guards.ts';

const NO_GUARD_INPUTS: GuardInputs = { uniques: [], keyCollations: new Map() };

/**
 * How the triggers are built. `mask: false` makes format 2's update trigger (no changed-column mask): the upgrade recognizes it, the bench compares with it.
 * `legacy: true` makes formats 2 and 3's capture triggers, which also rewrote the table's row of `_sluice_last` on every event and compared every column's typeof().
 * `inlineFlush: true` makes formats 2 to 4's flush triggers, which did the whole flush in their own body (no trigger on `_sluice_pending`).
 * `excluded`: the columns left out of capture (in no image, note, mask or change test).
 */
export interface TriggerOptions {
  readonly mask?: boolean;
  readonly legacy?: boolean;
  readonly inlineFlush?: boolean;
  readonly excluded?: readonly string[];
}

/** How many journal columns a table's events need in a mode (`excluded`: the columns left out of capture). */
export function journalWidthFor(info: TableInfo, mode: CaptureMode, excluded: readonly string[] = []): number {
  if (mode === 'images') return 2 * capturedColumns(info, excluded).length;
  if (mode === 'keys') return 2 * info.keyColumns.length;
  return 0;
}

/** The most change tests the update trigger's WHEN joins as one OR chain (996 parse; 997 pass SQLite's expression depth). */
const CHAINED_CHANGE_TESTS = 996;

/*
 * Column layout of a journal row:
 *   images: insert -> NEW row in c0..; delete -> OLD row in c0..;
 *           update -> OLD row in c0..c(n-1), NEW row in c(n)..c(2n-1)
 *   keys:   the same with the key columns only
 *   counter: no columns
 * Only built-in functions of SQLite 3.37 are used, so any writer (Python's
 * sqlite3, the sqlite3 CLI, ORMs) records the same events.
 */
export function buildTriggers(
  tid: number,
  info: TableInfo,
  mode: CaptureMode,
  guardInputs: GuardInputs = NO_GUARD_INPUTS,
  options: TriggerOptions = {},
): TriggerSet {
  const names = triggerNames(tid);
  const table = quoteIdent(info.name);
  // Excluded columns are in no image and no note, and a change of them alone is no change.
  const captured = capturedColumns(info, options.excluded ?? []);
  const imageCols = mode === 'images' ? captured.map((c) => c.name) : mode === 'keys' ? [...info.keyColumns] : [];
  const ref = (prefix: 'NEW' | 'OLD') => imageCols.map((c) => `${prefix}.${quoteIdent(c)}`);
  // julianday() with no argument is 'now', and a little cheaper to call.
  const ts = 'julianday()';
  const insertRow = (op: number, values: string[], mask?: string) => {
    const cols = values.map((_, i) => `, ${journalColumn(i)}`).join('');
    const vals = values.map((v) => `, ${v}`).join('');
    if (mask === undefined) return `INSERT INTO ${JOURNAL_TABLE} (tid, op, ts${cols}) VALUES (${tid}, ${op}, ${ts}${vals});`;
    return `INSERT INTO ${JOURNAL_TABLE} (tid, op, ts, ${MASK_COLUMN}${cols}) VALUES (${tid}, ${op}, ${ts},\n    ${mask}${vals});`;
  };
  // Formats 2 and 3 only (the journal's tick keeps `_sluice_last` now): last_insert_rowid() inside a
  // trigger is the journal row just written; the writer's own value is restored when the trigger ends.
  const bumpLast = options.legacy === true ? `\n  UPDATE ${LAST_TABLE} SET seq = last_insert_rowid() WHERE tid = ${tid};` : '';
  const guard = nullKeyGuard(info);

  // A real change is any column whose storage class or bytes differ. COLLATE
  // BINARY and typeof() keep collation and numeric equality (1 = 1.0) out of it.
  // The mask's bits are the captured columns' (the catalog's `columns`): an update of only excluded columns is no change.
  const changedColumns = captured.map((c) => {
    const o = `OLD.${quoteIdent(c.name)}`;
    const n = `NEW.${quoteIdent(c.name)}`;
    // An INTEGER PRIMARY KEY is always an integer: no storage class to compare.
    if (info.rowidAlias && c.pkIndex === 1) return `${o} IS NOT ${n}`;
    // typeof() is there for 1 -> 1.0, which IS NOT calls equal. A column of
    // TEXT affinity stores no number (only TEXT, BLOB, NULL), one of REAL
    // affinity no INTEGER (only REAL, TEXT, BLOB, NULL), and values of two
    // storage classes among those are never equal to IS NOT: without the two
    // typeof() calls the test is as exact and cheaper.
    const affinity = affinityOf(c.type);
    if (options.legacy !== true && (affinity === 'TEXT' || affinity === 'REAL')) return `${o} IS NOT ${n} COLLATE BINARY`;
    return `(${o} IS NOT ${n} COLLATE BINARY OR typeof(${o}) <> typeof(${n}))`;
  });
  // One left-deep OR chain, as every table up to CHAINED_CHANGE_TESTS columns has always been armed (its
  // installed triggers are compared by their text); past that the chain passes SQLite's expression depth
  // (1000), and the tests go in a balanced tree of ORs instead.
  const changed = changedColumns.length <= CHAINED_CHANGE_TESTS ? changedColumns.join('\n  OR ') : anyOf(changedColumns);
  // The same tests, one bit per column (src/capture/mask.ts). Keys mode
  // journals the mask of every column too; counter mode reads no events.
  const mask = mode === 'counter' || options.mask === false ? undefined : maskSql(changedColumns);

  const insert = `CREATE TRIGGER ${quoteIdent(names.insert)} AFTER INSERT ON ${table} FOR EACH ROW BEGIN
  ${guard('NEW')}${insertRow(OP_INSERT, ref('NEW'))}${bumpLast}
END`;
  const update = `CREATE TRIGGER ${quoteIdent(names.update)} AFTER UPDATE ON ${table} FOR EACH ROW WHEN
  ${changed}
BEGIN
  ${guard('NEW')}${insertRow(OP_UPDATE, [...ref('OLD'), ...ref('NEW')], mask)}${bumpLast}
END`;
  const del = `CREATE TRIGGER ${quoteIdent(names.delete)} AFTER DELETE ON ${table} FOR EACH ROW BEGIN
  ${insertRow(OP_DELETE, ref('OLD'))}${bumpLast}
END`;
  const guards = mode === 'counter' ? null : replaceGuards(tid, info, imageCols, guardInputs, options.inlineFlush === true);
  const all: TriggerSpec[] = [];
  const on = info.name;
  if (guards !== null) {
    all.push(
      { role: 'beforeInsert', name: names.beforeInsert, sql: guards.beforeInsert, on },
      { role: 'beforeUpdate', name: names.beforeUpdate, sql: guards.beforeUpdate, on },
    );
  }
  all.push(
    { role: 'insert', name: names.insert, sql: insert, on },
    { role: 'update', name: names.update, sql: update, on },
    { role: 'delete', name: names.delete, sql: del, on },
  );
  if (guards !== null) {
    all.push(
      { role: 'flushInsert', name: names.flushInsert, sql: guards.flushInsert, on },
      { role: 'flushUpdate', name: names.flushUpdate, sql: guards.flushUpdate, on },
    );
    if (guards.flushPending !== null)
      all.push({ role: 'flushPending', name: names.flushPending, sql: guards.flushPending, on: FLUSH_VIEW });
  }
  return { all, insert, update, delete: del, beforeInsert: guards?.beforeInsert ?? null, beforeUpdate: guards?.beforeUpdate ?? null };
}

/*
 * SQLite lets a non-INTEGER primary key of a rowid table hold NULL. Such a
 * row has no identity downstream, so the write fails loudly instead.
 */
function nullKeyGuard(info: TableInfo): (prefix: 'NEW') => string {
  if (info.withoutRowid || info.rowidAlias) return () => '';
  const nullable = info.columns.filter((c) => c.pkIndex > 0 && !c.notNull);
  if (nullable.length === 0) return () => '';
  const message = quoteString(`sluice: primary key of ${info.name} must not be NULL (the row would have no identity for capture)`);
  return (prefix) =>
    `SELECT RAISE(ABORT, ${message}) WHERE ${nullable.map((c) => `${prefix}.${quoteIdent(c.name)} IS NULL`).join(' OR ')};\n  `;
}
