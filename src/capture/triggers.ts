import { quoteIdent, quoteString } from '../sqlite/quote.ts';
import type { TableInfo, UniqueIndexInfo } from '../sqlite/introspect.ts';
import { JOURNAL_TABLE, LAST_TABLE, PENDING_TABLE, STATE_TABLE, OP_DELETE, OP_INSERT, OP_UPDATE, journalColumn, triggerNames, type CaptureMode, type TriggerNames } from './schema.ts';

/** One trigger sluice installs on a captured table. */
export interface TriggerSpec {
  readonly role: keyof TriggerNames;
  readonly name: string;
  readonly sql: string;
}

/**
 * A table's triggers in creation order. SQLite fires the triggers of one
 * event newest first, so the order is part of the design: the flush
 * triggers are made after the capture triggers and fire before them (the
 * rows a REPLACE deleted are journaled ahead of the write itself).
 */
export interface TriggerSet {
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

/** How many journal columns a table's events need in a mode. */
export function journalWidthFor(info: TableInfo, mode: CaptureMode): number {
  if (mode === 'images') return 2 * info.columns.length;
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
export function buildTriggers(tid: number, info: TableInfo, mode: CaptureMode, guardInputs: GuardInputs = NO_GUARD_INPUTS): TriggerSet {
  const names = triggerNames(tid);
  const table = quoteIdent(info.name);
  const imageCols = mode === 'images' ? info.columns.map((c) => c.name) : mode === 'keys' ? [...info.keyColumns] : [];
  const ref = (prefix: 'NEW' | 'OLD') => imageCols.map((c) => `${prefix}.${quoteIdent(c)}`);
  // julianday() with no argument is 'now', and a little cheaper to call.
  const ts = 'julianday()';
  const insertRow = (op: number, values: string[]) => {
    const cols = values.map((_, i) => `, ${journalColumn(i)}`).join('');
    const vals = values.map((v) => `, ${v}`).join('');
    return `INSERT INTO ${JOURNAL_TABLE} (tid, op, ts${cols}) VALUES (${tid}, ${op}, ${ts}${vals});`;
  };
  // last_insert_rowid() inside a trigger is the journal row just written; the
  // writer's own value is restored when the trigger ends.
  const bumpLast = `UPDATE ${LAST_TABLE} SET seq = last_insert_rowid() WHERE tid = ${tid};`;
  const guard = nullKeyGuard(info);

  // A real change is any column whose storage class or bytes differ. COLLATE
  // BINARY and typeof() keep collation and numeric equality (1 = 1.0) out of it.
  const changed = info.columns
    .map((c) => {
      const o = `OLD.${quoteIdent(c.name)}`;
      const n = `NEW.${quoteIdent(c.name)}`;
      // An INTEGER PRIMARY KEY is always an integer: no storage class to compare.
      if (info.rowidAlias && c.pkIndex === 1) return `${o} IS NOT ${n}`;
      return `(${o} IS NOT ${n} COLLATE BINARY OR typeof(${o}) <> typeof(${n}))`;
    })
    .join('\n  OR ');

  const insert = `CREATE TRIGGER ${quoteIdent(names.insert)} AFTER INSERT ON ${table} FOR EACH ROW BEGIN
  ${guard('NEW')}${insertRow(OP_INSERT, ref('NEW'))}
  ${bumpLast}
END`;
  const update = `CREATE TRIGGER ${quoteIdent(names.update)} AFTER UPDATE ON ${table} FOR EACH ROW WHEN
  ${changed}
BEGIN
  ${guard('NEW')}${insertRow(OP_UPDATE, [...ref('OLD'), ...ref('NEW')])}
  ${bumpLast}
END`;
  const del = `CREATE TRIGGER ${quoteIdent(names.delete)} AFTER DELETE ON ${table} FOR EACH ROW BEGIN
  ${insertRow(OP_DELETE, ref('OLD'))}
  ${bumpLast}
END`;
  const guards = mode === 'counter' ? null : replaceGuards(tid, info, imageCols, guardInputs);
  const all: TriggerSpec[] = [];
  if (guards !== null) {
    all.push({ role: 'beforeInsert', name: names.beforeInsert, sql: guards.beforeInsert }, { role: 'beforeUpdate', name: names.beforeUpdate, sql: guards.beforeUpdate });
  }
  all.push({ role: 'insert', name: names.insert, sql: insert }, { role: 'update', name: names.update, sql: update }, { role: 'delete', name: names.delete, sql: del });
  if (guards !== null) {
    all.push({ role: 'flushInsert', name: names.flushInsert, sql: guards.flushInsert }, { role: 'flushUpdate', name: names.flushUpdate, sql: guards.flushUpdate });
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
): { beforeInsert: string; beforeUpdate: string; flushInsert: string; flushUpdate: string } {
  const names = triggerNames(tid);
  const table = quoteIdent(info.name);
  const cols = imageCols.map((_, i) => `, ${journalColumn(i)}`).join('');
  const values = imageCols.map((c) => `, ${quoteIdent(c)}`).join('');
  const collate = (c: string | undefined) => (c === undefined ? '' : ` COLLATE ${c}`);
  const match = (prefix: string, columns: readonly { name: string; collate?: string }[], lhs = '') =>
    `(${columns.map((c) => `${lhs}${quoteIdent(c.name)} = ${prefix}.${quoteIdent(c.name)}${collate(c.collate)}`).join(' AND ')})`;
  const key = info.keyColumns.map((name) => {
    const coll = inputs.keyCollations.get(name);
    return coll === undefined ? { name } : { name, collate: coll };
  });
  const constraints = [{ columns: key, partial: false }, ...inputs.uniques.map((u) => ({ columns: u.columns, partial: u.partial }))];
  const hw = `(SELECT coalesce(max(seq), 0) FROM ${JOURNAL_TABLE})`;
  const exists = (c: (typeof constraints)[number], extra: string) => `EXISTS (SELECT 1 FROM ${table} WHERE ${match('NEW', c.columns)}${extra})`;
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
  const changedAny = (columns: readonly { name: string }[]) => columns.map((c) => `NEW.${quoteIdent(c.name)} IS NOT OLD.${quoteIdent(c.name)} COLLATE BINARY`).join(' OR ');
  const updateWhen = constraints.map((c) => (c.partial ? exists(c, notSelf) : `((${changedAny(c.columns)}) AND ${exists(c, notSelf)})`)).join('\n  OR ');
  // UPDATE OF: SQLite leaves the update guards out of every UPDATE whose SET
  // names none of these columns (decided when the statement is compiled), so
  // an ordinary update pays nothing for them. A partial index can be entered
  // by a change to its predicate's columns, which are not parsed out: with
  // one, the guards watch every update.
  const watched = inputs.uniques.some((u) => u.partial) ? '' : ` OF ${[...new Set(constraints.flatMap((c) => c.columns.map((col) => col.name)))].map(quoteIdent).join(', ')}`;

  // Positions of the key columns in the first image half of a journal row.
  const keyPos = info.keyColumns.map((k) => imageCols.indexOf(k));
  const pKey = (p: string) => key.map((k, i) => ({ name: journalColumn(keyPos[i] as number), collate: k.collate, col: k.name, p }));
  const isNewKey = `(${pKey('p').map((k) => `p.${k.name} = NEW.${quoteIdent(k.col)}${collate(k.collate)}`).join(' AND ')})`;
  const rowGone = `NOT EXISTS (SELECT 1 FROM ${table} AS r WHERE ${pKey('p').map((k) => `r.${quoteIdent(k.col)} = p.${k.name}`).join(' AND ')})`;
  const untouched = `NOT EXISTS (SELECT 1 FROM ${JOURNAL_TABLE} AS j WHERE j.seq > p.hw AND j.tid = ${tid} AND ${pKey('p').map((k) => `j.${k.name} IS p.${k.name}`).join(' AND ')})`;
  const fresh = `p.hw >= (SELECT pruned_through FROM ${STATE_TABLE})`;
  // The updated row itself is never deleted by its own write (a stale note
  // of it would otherwise look gone once its key changed, or like the new key).
  const notOld = (op: number) => (op === OP_UPDATE ? ` AND NOT (${pKey('p').map((k) => `p.${k.name} = OLD.${quoteIdent(k.col)}${collate(k.collate)}`).join(' AND ')})` : '');
  const flush = (op: number) =>
    `INSERT INTO ${JOURNAL_TABLE} (tid, op, ts${cols}) SELECT ${tid}, ${OP_DELETE}, julianday()${cols.replace(/, c/g, ', p.c')} FROM ${PENDING_TABLE} AS p WHERE p.tid = ${tid} AND p.op = ${op} AND ${fresh}${notOld(op)} AND (${isNewKey} OR ${rowGone}) AND ${untouched} ORDER BY p.rowid;
  DELETE FROM ${PENDING_TABLE} WHERE tid = ${tid} AND op = ${op};`;
  const pendingHere = (op: number) => `EXISTS (SELECT 1 FROM ${PENDING_TABLE} WHERE tid = ${tid} AND op = ${op})`;
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
  ${flush(OP_INSERT)}
END`,
    flushUpdate: `CREATE TRIGGER ${quoteIdent(names.flushUpdate)} AFTER UPDATE${watched} ON ${table} FOR EACH ROW WHEN ${pendingHere(OP_UPDATE)} BEGIN
  ${flush(OP_UPDATE)}
END`,
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
