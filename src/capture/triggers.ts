import { affinityOf, foldIdent, quoteIdent, quoteString } from '../sqlite/index.ts';

/** The names SQL can reach a rowid table's hidden rowid by (unless a column takes the name). */
const ROWID_NAMES = ['rowid', 'oid', '_rowid_'] as const;
import type { TableInfo, UniqueIndexInfo } from '../sqlite/index.ts';
import { capturedColumns } from './excluded.ts';
import { maskSql } from './mask.ts';
import {
  FLUSH_VIEW,
  JOURNAL_TABLE,
  MASK_COLUMN,
  LAST_TABLE,
  PENDING_TABLE,
  STATE_TABLE,
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

/** What the REPLACE guards of a table compare: its secondary UNIQUE indexes and its key's index collations. */
export interface GuardInputs {
  readonly uniques: readonly UniqueIndexInfo[];
  /** Collation of each key column in the primary key's own index (none for an INTEGER PRIMARY KEY). */
  readonly keyCollations: ReadonlyMap<string, string>;
}

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
  const changed = changedColumns.join('\n  OR ');
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
 * INSERT OR REPLACE / UPDATE OR REPLACE delete the rows they conflict with,
 * on the primary key or on any UNIQUE index. Without recursive_triggers
 * (Python's sqlite3 and the sqlite3 shell by default) those deletes fire no
 * delete trigger, so the replaced row's before-image would be lost and a
 * row deleted through a secondary UNIQUE index would vanish from the
 * record. So:
 *
 * - BEFORE triggers, only when the new values conflict with an existing
 *   row (one indexed lookup per constraint, so the common case costs a seek),
 *   note those rows in _sluice_pending with the journal's newest seq.
 * - AFTER flush triggers, only when notes exist, journal as deletes the
 *   noted rows that this write really deleted: the row is gone (or its key
 *   now holds the new row) and no event since the note touched its key. The
 *   second test makes the guard exact whoever deleted the row: a writer
 *   with recursive_triggers on (the delete trigger journaled it), a user
 *   BEFORE trigger that deletes the conflicting row itself, or one that
 *   moves it. A write that did not happen (OR IGNORE, DO NOTHING, DO UPDATE,
 *   a failed constraint) runs no flush of its kind; its notes are stale, and
 *   the same tests (the row still exists) keep them out when a later flush
 *   sees them. Notes older than the pruned horizon are stale by
 *   construction and ignored.
 *
 * The flush triggers are made after the capture triggers, so they fire
 * before them: deletes are journaled ahead of the write that caused them.
 * recursive_triggers is never read, so the events are the same with it on
 * or off.
 */
function replaceGuards(
  tid: number,
  info: TableInfo,
  imageCols: readonly string[],
  inputs: GuardInputs,
  inlineFlush: boolean,
): { beforeInsert: string; beforeUpdate: string; flushInsert: string; flushUpdate: string; flushPending: string | null } {
  const names = triggerNames(tid);
  const table = quoteIdent(info.name);
  const cols = imageCols.map((_, i) => `, ${journalColumn(i)}`).join('');
  // BINARY: the UNION below must not fold two rows that are equal only under a column's collation.
  const values = imageCols.map((c) => `, ${quoteIdent(c)} COLLATE BINARY`).join('');
  const collate = (c: string | undefined) => (c === undefined ? '' : ` COLLATE ${c}`);
  type GuardColumn = { readonly name: string; readonly collate?: string; readonly rowid?: boolean };
  const ident = (c: GuardColumn) => (c.rowid === true ? c.name : quoteIdent(c.name));
  const match = (prefix: string, columns: readonly GuardColumn[]) =>
    `(${columns.map((c) => `${ident(c)} = ${prefix}.${ident(c)}${collate(c.collate)}`).join(' AND ')})`;
  const key: GuardColumn[] = info.keyColumns.map((name) => {
    const coll = inputs.keyCollations.get(name);
    return coll === undefined ? { name } : { name, collate: coll };
  });
  const constraints: { columns: readonly GuardColumn[]; partial: boolean }[] = [
    { columns: key, partial: false },
    ...inputs.uniques.map((u) => ({ columns: u.columns, partial: u.partial })),
  ];
  // A rowid table whose key is not the rowid has a hidden one, and a REPLACE
  // that names it (INSERT ... (rowid, ...), UPDATE ... SET rowid = ...)
  // deletes the row holding it: one more constraint.
  const rowid =
    !info.withoutRowid && !info.rowidAlias ? ROWID_NAMES.find((n) => !info.columns.some((c) => foldIdent(c.name) === n)) : undefined;
  if (rowid !== undefined) constraints.push({ columns: [{ name: rowid, rowid: true }], partial: false });
  const hw = `(SELECT coalesce(max(seq), 0) FROM ${JOURNAL_TABLE})`;
  const exists = (c: (typeof constraints)[number], extra: string) =>
    `EXISTS (SELECT 1 FROM ${table} WHERE ${match('NEW', c.columns)}${extra})`;
  // One indexed lookup per constraint, joined by UNION: an OR of them would
  // be planned as a full table scan inside the trigger.
  // Notes are cleared per kind of write (op): the nested write of a user
  // trigger of another kind (an UPDATE run by a BEFORE INSERT trigger) then
  // keeps the outer write's notes.
  const note = (op: number, extra: string) =>
    `DELETE FROM ${PENDING_TABLE} WHERE tid = ${tid} AND op = ${op};
  INSERT INTO ${PENDING_TABLE} (tid, op, hw${cols}) ${constraints.map((c) => `SELECT ${tid}, ${op}, ${hw}${values} FROM ${table} WHERE ${match('NEW', c.columns)}${extra}`).join(' UNION ')};`;
  const notSelf = ` AND NOT ${match('OLD', key)}`;
  // An update can only newly conflict on a constraint whose columns it
  // changed (byte-wise); a partial index can also be entered by changing
  // its predicate's columns, so it is always looked up.
  const changedAny = (columns: readonly GuardColumn[]) =>
    columns.map((c) => `NEW.${ident(c)} IS NOT OLD.${ident(c)} COLLATE BINARY`).join(' OR ');
  const updateWhen = constraints
    .map((c) => (c.partial ? exists(c, notSelf) : `((${changedAny(c.columns)}) AND ${exists(c, notSelf)})`))
    .join('\n  OR ');
  // UPDATE OF: SQLite leaves the update guards out of every UPDATE whose SET
  // names none of these columns (decided when the statement is compiled, by
  // name, so each spelling of the rowid is listed), so an ordinary update
  // pays nothing for them. A partial index can be entered by a change to its
  // predicate's columns, which are not parsed out: with one, the guards
  // watch every update.
  // The rowid's names are watched on every rowid table: on one with an
  // INTEGER PRIMARY KEY, SET rowid = ... changes the key. A generated
  // column is never named in a SET, so an index over one (like a partial
  // index) makes the guards watch every update.
  const watchedNames = [
    ...new Set(constraints.flatMap((c) => c.columns.filter((col) => col.rowid !== true).map((col) => quoteIdent(col.name)))),
  ];
  if (!info.withoutRowid) watchedNames.push(...ROWID_NAMES.filter((n) => !info.columns.some((c) => foldIdent(c.name) === n)));
  const generated = new Set(info.columns.filter((c) => c.hidden === 2 || c.hidden === 3).map((c) => c.name));
  const watchAll = inputs.uniques.some((u) => u.partial || u.columns.some((c) => generated.has(c.name)));
  const watched = watchAll ? '' : ` OF ${watchedNames.join(', ')}`;

  // Positions of the key columns in the two image halves of a journal row.
  const n = imageCols.length;
  const keyPos = info.keyColumns.map((k) => imageCols.indexOf(k));
  const keyCols = key.map((k, i) => ({
    old: journalColumn(keyPos[i] as number),
    new: journalColumn(n + (keyPos[i] as number)),
    collate: k.collate,
    col: k.name,
  }));
  const sameKey = (a: (k: (typeof keyCols)[number]) => string, b: (k: (typeof keyCols)[number]) => string) =>
    `(${keyCols.map((k) => `${a(k)} = ${b(k)}${collate(k.collate)}`).join(' AND ')})`;
  const isNewKey = sameKey(
    (k) => `p.${k.old}`,
    (k) => `NEW.${quoteIdent(k.col)}`,
  );
  const rowGone = `NOT EXISTS (SELECT 1 FROM ${table} AS r WHERE ${sameKey(
    (k) => `r.${quoteIdent(k.col)}`,
    (k) => `p.${k.old}`,
  )})`;
  // Taken off its key since the note (deleted, or its key moved): whoever
  // did it journaled it. An update in place keeps it there, newer.
  const onKey = sameKey(
    (k) => `j.${k.old}`,
    (k) => `p.${k.old}`,
  );
  const untouched = `NOT EXISTS (SELECT 1 FROM ${JOURNAL_TABLE} AS j WHERE j.seq > p.hw AND j.tid = ${tid} AND ${onKey} AND (j.op = ${OP_DELETE} OR (j.op = ${OP_UPDATE} AND NOT ${sameKey(
    (k) => `j.${k.new}`,
    (k) => `p.${k.old}`,
  )})))`;
  // The image to journal: the note's, or the newest in-place update's after-image.
  const newest = `(SELECT max(j.seq) FROM ${JOURNAL_TABLE} AS j WHERE j.seq > p.hw AND j.tid = ${tid} AND j.op = ${OP_UPDATE} AND ${onKey})`;
  const image = imageCols.map((_, i) => `, CASE WHEN u.seq IS NULL THEN p.${journalColumn(i)} ELSE u.${journalColumn(n + i)} END`).join('');
  const fresh = `p.hw >= (SELECT pruned_through FROM ${STATE_TABLE})`;
  // The updated row itself is never deleted by its own write (a stale note
  // of it would otherwise look gone once its key changed, or like the new key).
  const notOld = (op: number) =>
    op === OP_UPDATE
      ? ` AND NOT ${sameKey(
          (k) => `p.${k.old}`,
          (k) => `OLD.${quoteIdent(k.col)}`,
        )}`
      : '';
  const flush = (op: number) =>
    `INSERT INTO ${JOURNAL_TABLE} (tid, op, ts${cols}) SELECT ${tid}, ${OP_DELETE}, julianday()${image} FROM ${PENDING_TABLE} AS p LEFT JOIN ${JOURNAL_TABLE} AS u ON u.seq = ${newest} WHERE p.tid = ${tid} AND p.op = ${op} AND ${fresh}${notOld(op)} AND (${isNewKey} OR ${rowGone}) AND ${untouched} ORDER BY p.rowid;
  DELETE FROM ${PENDING_TABLE} WHERE tid = ${tid} AND op = ${op};`;
  /*
   * Since format 5 the flush is split in two. A trigger costs, on every row
   * it fires for, in proportion to the size of its body, even when its WHEN
   * is false (docs/journal.md, Format 4), and the insert flush trigger fires
   * for every insert. So its body only forgets the notes of this kind of
   * write whose row this write did not delete (the tests that need NEW, OLD
   * or the table), then inserts the table's tid and the kind into the view
   * FLUSH_VIEW. The view's trigger for the table (flushPending) does the
   * rest, exactly as the flush did: the pruned horizon, no event since the
   * note on its key, the image, in rowid order, and forgets the notes.
   * Nothing runs between the two statements (the pending table has no
   * trigger), so the notes left are exactly the ones the flush kept.
   * The view's trigger names only sluice's own tables. An object outside the
   * table that named the table would be left behind when the table is
   * dropped, and SQLite then refuses every later ALTER TABLE ... RENAME in
   * the file (a migration's CREATE new, copy, DROP old, RENAME new included)
   * with "error in trigger ...: no such table": so the tests that read the
   * table stay in the table's own trigger.
   */
  const pending = (k: (typeof keyCols)[number]) => `${PENDING_TABLE}.${k.old}`;
  const markNewKey = sameKey(pending, (k) => `NEW.${quoteIdent(k.col)}`);
  const markGone = `NOT EXISTS (SELECT 1 FROM ${table} AS r WHERE ${sameKey((k) => `r.${quoteIdent(k.col)}`, pending)})`;
  const markNotOld = (op: number) => (op === OP_UPDATE ? `NOT ${sameKey(pending, (k) => `OLD.${quoteIdent(k.col)}`)} AND ` : '');
  const mark = (op: number) =>
    `DELETE FROM ${PENDING_TABLE} WHERE tid = ${tid} AND op = ${op} AND NOT coalesce(${markNotOld(op)}(${markNewKey} OR ${markGone}), 0);
  INSERT INTO ${FLUSH_VIEW} (tid, op) VALUES (${tid}, ${op});`;
  const flushPending = inlineFlush
    ? null
    : `CREATE TRIGGER ${quoteIdent(names.flushPending)} INSTEAD OF INSERT ON ${FLUSH_VIEW} FOR EACH ROW WHEN NEW.tid = ${tid} BEGIN
  INSERT INTO ${JOURNAL_TABLE} (tid, op, ts${cols}) SELECT ${tid}, ${OP_DELETE}, julianday()${image} FROM ${PENDING_TABLE} AS p LEFT JOIN ${JOURNAL_TABLE} AS u ON u.seq = ${newest} WHERE p.tid = ${tid} AND p.op = NEW.op AND ${fresh} AND ${untouched} ORDER BY p.rowid;
  DELETE FROM ${PENDING_TABLE} WHERE tid = ${tid} AND op = NEW.op;
END`;
  const pendingHere = (op: number) => `EXISTS (SELECT 1 FROM ${PENDING_TABLE} WHERE tid = ${tid} AND op = ${op})`;
  const flushBody = (op: number) => (inlineFlush ? flush(op) : mark(op));
  return {
    beforeInsert: `CREATE TRIGGER ${quoteIdent(names.beforeInsert)} BEFORE INSERT ON ${table} FOR EACH ROW WHEN
  ${constraints.map((c) => exists(c, '')).join('\n  OR ')}
BEGIN
  ${note(OP_INSERT, '')}
END`,
    beforeUpdate: `CREATE TRIGGER ${quoteIdent(names.beforeUpdate)} BEFORE UPDATE${watched} ON ${table} FOR EACH ROW WHEN
  ${updateWhen}
BEGIN
  ${note(OP_UPDATE, notSelf)}
END`,
    flushInsert: `CREATE TRIGGER ${quoteIdent(names.flushInsert)} AFTER INSERT ON ${table} FOR EACH ROW WHEN ${pendingHere(OP_INSERT)} BEGIN
  ${flushBody(OP_INSERT)}
END`,
    flushUpdate: `CREATE TRIGGER ${quoteIdent(names.flushUpdate)} AFTER UPDATE${watched} ON ${table} FOR EACH ROW WHEN ${pendingHere(OP_UPDATE)} BEGIN
  ${flushBody(OP_UPDATE)}
END`,
    flushPending,
  };
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
