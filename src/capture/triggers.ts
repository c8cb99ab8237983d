import { quoteIdent, quoteString } from '../sqlite/quote.ts';
import type { TableInfo } from '../sqlite/introspect.ts';
import { JOURNAL_TABLE, TABLES_TABLE, OP_DELETE, OP_INSERT, OP_UPDATE, journalColumn, triggerNames, type CaptureMode } from './schema.ts';

export interface TriggerSet {
  readonly insert: string;
  readonly update: string;
  readonly delete: string;
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
export function buildTriggers(tid: number, info: TableInfo, mode: CaptureMode): TriggerSet {
  const names = triggerNames(tid);
  const table = quoteIdent(info.name);
  const imageCols = mode === 'images' ? info.columns.map((c) => c.name) : mode === 'keys' ? [...info.keyColumns] : [];
  const ref = (prefix: 'NEW' | 'OLD') => imageCols.map((c) => `${prefix}.${quoteIdent(c)}`);
  const ts = "julianday('now')";
  const insertRow = (op: number, values: string[]) => {
    const cols = values.map((_, i) => `, ${journalColumn(i)}`).join('');
    const vals = values.map((v) => `, ${v}`).join('');
    return `INSERT INTO ${JOURNAL_TABLE} (tid, op, ts${cols}) VALUES (${tid}, ${op}, ${ts}${vals});`;
  };
  // last_insert_rowid() inside a trigger is the journal row just written; the
  // writer's own value is restored when the trigger ends.
  const bumpLast = `UPDATE ${TABLES_TABLE} SET last_seq = last_insert_rowid() WHERE tid = ${tid};`;
  const guard = nullKeyGuard(info);

  // A real change is any column whose storage class or bytes differ. COLLATE
  // BINARY and typeof() keep collation and numeric equality (1 = 1.0) out of it.
  const changed = info.columns
    .map((c) => {
      const o = `OLD.${quoteIdent(c.name)}`;
      const n = `NEW.${quoteIdent(c.name)}`;
      return `(${o} IS NOT ${n} COLLATE BINARY OR typeof(${o}) <> typeof(${n}))`;
    })
    .join('\n  OR ');

  return {
    insert: `CREATE TRIGGER ${quoteIdent(names.insert)} AFTER INSERT ON ${table} FOR EACH ROW BEGIN
  ${guard('NEW')}${insertRow(OP_INSERT, ref('NEW'))}
  ${bumpLast}
END`,
    update: `CREATE TRIGGER ${quoteIdent(names.update)} AFTER UPDATE ON ${table} FOR EACH ROW WHEN
  ${changed}
BEGIN
  ${guard('NEW')}${insertRow(OP_UPDATE, [...ref('OLD'), ...ref('NEW')])}
  ${bumpLast}
END`,
    delete: `CREATE TRIGGER ${quoteIdent(names.delete)} AFTER DELETE ON ${table} FOR EACH ROW BEGIN
  ${insertRow(OP_DELETE, ref('OLD'))}
  ${bumpLast}
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
