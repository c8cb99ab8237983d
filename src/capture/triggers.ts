import { quoteIdent, quoteString } from '../sqlite/quote.ts';
import type { TableInfo, UniqueIndexInfo } from '../sqlite/introspect.ts';
import { JOURNAL_TABLE, LAST_TABLE, PENDING_TABLE, OP_DELETE, OP_INSERT, OP_UPDATE, journalColumn, triggerNames, type CaptureMode } from './schema.ts';

export interface TriggerSet {
  readonly insert: string;
  readonly update: string;
  readonly delete: string;
  /** Only for tables with secondary UNIQUE indexes: see replaceGuards. */
  readonly beforeInsert: string | null;
  readonly beforeUpdate: string | null;
}

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
export function buildTriggers(tid: number, info: TableInfo, mode: CaptureMode, uniques: readonly UniqueIndexInfo[] = []): TriggerSet {
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

  const guards = mode === 'counter' ? null : replaceGuards(tid, info, imageCols, uniques);
  return {
    insert: `CREATE TRIGGER ${quoteIdent(names.insert)} AFTER INSERT ON ${table} FOR EACH ROW BEGIN
  ${guard('NEW')}${guards?.flush(OP_INSERT) ?? ''}${insertRow(OP_INSERT, ref('NEW'))}
  ${bumpLast}
END`,
    update: `CREATE TRIGGER ${quoteIdent(names.update)} AFTER UPDATE ON ${table} FOR EACH ROW WHEN
  ${changed}
BEGIN
  ${guard('NEW')}${guards?.flush(OP_UPDATE) ?? ''}${insertRow(OP_UPDATE, [...ref('OLD'), ...ref('NEW')])}
  ${bumpLast}
END`,
    delete: `CREATE TRIGGER ${quoteIdent(names.delete)} AFTER DELETE ON ${table} FOR EACH ROW BEGIN
  ${insertRow(OP_DELETE, ref('OLD'))}
  ${bumpLast}
END`,
    beforeInsert: guards?.beforeInsert ?? null,
    beforeUpdate: guards?.beforeUpdate ?? null,
  };
}

const RECURSIVE_OFF = '(SELECT recursive_triggers FROM pragma_recursive_triggers()) = 0';

/*
 * INSERT OR REPLACE / UPDATE OR REPLACE delete the rows they conflict with.
 * Without recursive_triggers (Python's sqlite3 and the sqlite3 shell by
 * default) those deletes fire no delete trigger, and a row deleted through a
 * secondary UNIQUE index would vanish from the record: a projection would
 * keep it forever. So for tables with such indexes, BEFORE triggers (only
 * when recursive_triggers is off) note the rows the new values conflict
 * with, and the AFTER trigger, which runs only if the write went through,
 * journals them as deletes ahead of the write itself. An ignored insert
 * (OR IGNORE, DO NOTHING) runs no AFTER trigger; its notes are cleared by
 * the next BEFORE trigger. A primary-key REPLACE on a table without such
 * indexes is caught downstream instead (UNCAPTURED_REPLACE).
 */
function replaceGuards(
  tid: number,
  info: TableInfo,
  imageCols: readonly string[],
  uniques: readonly UniqueIndexInfo[],
): { beforeInsert: string; beforeUpdate: string; flush: (op: number) => string } | null {
  if (uniques.length === 0) return null;
  const names = triggerNames(tid);
  const table = quoteIdent(info.name);
  const cols = imageCols.map((_, i) => `, ${journalColumn(i)}`).join('');
  const values = imageCols.map((c) => `, ${quoteIdent(c)}`).join('');
  const match = (prefix: 'NEW' | 'OLD', columns: readonly { name: string; collate?: string }[]) =>
    `(${columns.map((c) => `${quoteIdent(c.name)} = ${prefix}.${quoteIdent(c.name)}${c.collate !== undefined ? ` COLLATE ${c.collate}` : ''}`).join(' AND ')})`;
  const key = info.keyColumns.map((name) => ({ name }));
  const conflicts = [match('NEW', key), ...uniques.map((u) => match('NEW', u.columns))];
  // One indexed lookup per constraint, joined by UNION: an OR of them would
  // be planned as a full table scan inside the trigger.
  const note = (op: number, extra: string) =>
    `DELETE FROM ${PENDING_TABLE} WHERE tid = ${tid};
  INSERT INTO ${PENDING_TABLE} (tid, op${cols}) ${conflicts.map((c) => `SELECT ${tid}, ${op}${values} FROM ${table} WHERE ${c}${extra}`).join(' UNION ')};`;
  return {
    beforeInsert: `CREATE TRIGGER ${quoteIdent(names.beforeInsert)} BEFORE INSERT ON ${table} FOR EACH ROW WHEN ${RECURSIVE_OFF} BEGIN
  ${note(OP_INSERT, '')}
END`,
    beforeUpdate: `CREATE TRIGGER ${quoteIdent(names.beforeUpdate)} BEFORE UPDATE ON ${table} FOR EACH ROW WHEN ${RECURSIVE_OFF} BEGIN
  ${note(OP_UPDATE, ` AND NOT ${match('OLD', key)}`)}
END`,
    flush: (op) =>
      `INSERT INTO ${JOURNAL_TABLE} (tid, op, ts${cols}) SELECT ${tid}, ${OP_DELETE}, julianday()${cols} FROM ${PENDING_TABLE} WHERE tid = ${tid} AND op = ${op} AND ${RECURSIVE_OFF} ORDER BY rowid;
  DELETE FROM ${PENDING_TABLE} WHERE tid = ${tid};
  `,
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
