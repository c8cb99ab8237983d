import { collationSql, foldIdent, quoteIdent, quoteString } from '../sqlite/index.ts';
import type { TableInfo, UniqueIndexInfo } from '../sqlite/index.ts';
import {
  FLUSH_VIEW,
  JOURNAL_TABLE,
  PENDING_TABLE,
  STATE_TABLE,
  OP_DELETE,
  OP_INSERT,
  OP_UPDATE,
  journalColumn,
  triggerNames,
} from './schema.ts';

/** What the REPLACE guards of a table compare: its secondary UNIQUE indexes and its key's index collations. */
export interface GuardInputs {
  readonly uniques: readonly UniqueIndexInfo[];
  /** Collation of each key column in the primary key's own index (none for an INTEGER PRIMARY KEY). */
  readonly keyCollations: ReadonlyMap<string, string>;
}

/**
 * A column's DEFAULT (as pragma_table_info gives it) as an expression a trigger can evaluate, or undefined.
 * A bare or quoted identifier is a string to SQLite there (`DEFAULT abc` is 'abc') but would name a column in a
 * trigger, so it becomes a string literal; an expression with a quote character of an identifier outside its string literals is left out.
 */
export function defaultExpression(sql: string): string | undefined {
  if (/^(current_time|current_date|current_timestamp|true|false|null)$/i.test(sql)) return sql;
  if (/^[A-Za-z_][A-Za-z0-9_$]*$/.test(sql)) return quoteString(sql);
  const quoted = /^"((?:[^"]|"")*)"$/.exec(sql) ?? /^`((?:[^`]|``)*)`$/.exec(sql) ?? /^\[([^\]]*)\]$/.exec(sql);
  if (quoted !== null) return quoteString((quoted[1] as string).replace(/""|``/g, (q) => q.charAt(0)));
  // (Inside a string literal, such as DEFAULT '[]' or 'a"b', a quote character of an identifier is only text.)
  return /["`[]/.test(sql.replace(/'(?:[^']|'')*'/g, "''")) ? undefined : `(${sql})`;
}

/** The names SQL can reach a rowid table's hidden rowid by (unless a column takes the name). */
const ROWID_NAMES = ['rowid', 'oid', '_rowid_'] as const;

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
export function replaceGuards(
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
  const collate = (c: string | undefined) => (c === undefined ? '' : ` COLLATE ${collationSql(c)}`);
  type GuardColumn = { readonly name: string; readonly collate?: string; readonly rowid?: boolean };
  const ident = (c: GuardColumn) => (c.rowid === true ? c.name : quoteIdent(c.name));
  // Under REPLACE (the statement's or the column's own ON CONFLICT), a NULL
  // written to a NOT NULL column with a DEFAULT takes the default after the
  // BEFORE triggers ran, and the row the default collides with is deleted:
  // the guards look up the default in its place. (A NULL that is not
  // replaced fails the write, whose notes are then stale.) Formats 2 to 4
  // compared NEW alone.
  const defaults = new Map(
    inlineFlush
      ? []
      : info.columns
          .filter((c) => c.notNull && c.hidden === 0 && !(info.rowidAlias && c.pkIndex > 0))
          .flatMap((c) => {
            const d = c.defaultSql === null ? undefined : defaultExpression(c.defaultSql);
            return d === undefined ? [] : [[c.name, d] as const];
          }),
  );
  const newValue = (c: GuardColumn) => {
    const d = c.rowid === true ? undefined : defaults.get(c.name);
    return d === undefined ? `NEW.${ident(c)}` : `coalesce(NEW.${ident(c)}, ${d})`;
  };
  const match = (prefix: 'NEW' | 'OLD', columns: readonly GuardColumn[]) =>
    `(${columns.map((c) => `${ident(c)} = ${prefix === 'NEW' ? newValue(c) : `OLD.${ident(c)}`}${collate(c.collate)}`).join(' AND ')})`;
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
  // Notes are kept per kind of write (op): the nested write of a user
  // trigger of another kind (an UPDATE run by a BEFORE INSERT trigger) then
  // keeps the outer write's notes. Formats 2 to 4 first cleared the notes
  // of this kind (stale notes of a write that did not happen); format 5
  // keeps them, which takes a statement out of the body of a trigger that
  // fires on every insert (about 2,000 instructions): the flush forgets the
  // stale notes of rows this write did not delete, and of a row it did
  // delete journals only the newest note (the image as this write found it).
  const clear = (op: number) => (inlineFlush ? `DELETE FROM ${PENDING_TABLE} WHERE tid = ${tid} AND op = ${op};\n  ` : '');
  const note = (op: number, extra: string) =>
    `${clear(op)}INSERT INTO ${PENDING_TABLE} (tid, op, hw${cols}) ${constraints.map((c) => `SELECT ${tid}, ${op}, ${hw}${values} FROM ${table} WHERE ${match('NEW', c.columns)}${extra}`).join(' UNION ')};`;
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
  // A stale note (of a write that did not happen) of a row this write deleted and noted again: the newest note is the row as this write found it.
  const newestNote = `p.rowid = (SELECT max(q.rowid) FROM ${PENDING_TABLE} AS q WHERE q.tid = ${tid} AND q.op = NEW.op AND ${sameKey(
    (k) => `q.${k.old}`,
    (k) => `p.${k.old}`,
  )})`;
  const flushPending = inlineFlush
    ? null
    : `CREATE TRIGGER ${quoteIdent(names.flushPending)} INSTEAD OF INSERT ON ${FLUSH_VIEW} FOR EACH ROW WHEN NEW.tid = ${tid} BEGIN
  INSERT INTO ${JOURNAL_TABLE} (tid, op, ts${cols}) SELECT ${tid}, ${OP_DELETE}, julianday()${image} FROM ${PENDING_TABLE} AS p LEFT JOIN ${JOURNAL_TABLE} AS u ON u.seq = ${newest} WHERE p.tid = ${tid} AND p.op = NEW.op AND ${newestNote} AND ${fresh} AND ${untouched} ORDER BY p.rowid;
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
