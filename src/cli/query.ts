import type { Command } from 'commander';
import { openDatabase, runQuery, toJsonValue, type Db } from '../index.ts';
import { projectionWrites } from '../internal.ts';
import { stderr } from './closed-pipe.ts';
import { parseWholeNumber } from './enable.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

/**
 * A read runs on a read-only connection: it writes nothing, not even a
 * checkpoint when it closes. A write gets a writable one, with
 * recursive_triggers at SQLite's default (off), so the user's own triggers
 * (an AFTER UPDATE that touches updated_at) behave as in the user's app.
 * Neither changes the journal mode.
 */
function openForQuery(dbPath: string, sql: string): Db {
  const reader = openDatabase(dbPath, { role: 'database', readonly: true });
  let write: boolean;
  try {
    write = !reader.prepare(sql).readonly;
  } catch {
    return reader; // runQuery reports BAD_SQL
  }
  if (!write) return reader;
  reader.close();
  return openDatabase(dbPath, { role: 'database', recursiveTriggers: false });
}

export function registerQuery(program: Command): void {
  program
    .command('query')
    .description('Run one SQL statement on a source or target. Writes run in their own transaction; over the row budget nothing commits.')
    .argument('<db>', 'SQLite database')
    .argument(
      '<sql>',
      'one SQL statement (not ATTACH/DETACH, PRAGMA, BEGIN/COMMIT/SAVEPOINT..., VACUUM: refused with exit 2; read a pragma with SELECT * FROM pragma_table_info(...))',
    )
    .option(
      '--max-rows <n>',
      'most rows the statement may return: going over is an error, and a write with RETURNING that goes over is rolled back. It does not bound the rows a write changes without RETURNING (they are reported as changes)',
      parseWholeNumber,
      1000,
    )
    .option('--json', 'print one JSON object {columns, rows, changes}')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice query cache.db "SELECT title FROM issues_search WHERE issues_search MATCH \'crash\'"\n  $ sluice query app.db "UPDATE issues SET state = \'closed\' WHERE number < 3 RETURNING number" --max-rows 10',
    )
    .action((dbPath: string, sql: string, opts: { maxRows: number; json?: boolean }) => {
      const db = openForQuery(dbPath, sql);
      try {
        // A write to a projection's table is the user's to make, but it makes the projection no longer its source's.
        const warnings = (db.readonly ? [] : projectionWrites(db, sql)).map((w) => ({
          code: 'WRITES_PROJECTION',
          projection: w.projection,
          table: w.table,
          message: `this statement writes table ${w.table} of projection ${w.projection}: its rows are no longer its source's, and sluice suspends it once it sees the edit (TARGET_EDITED: a running sync --follow at once, else sluice verify). Change the source or the projection's definition instead, or rebuild it afterwards with sluice reinit`,
        }));
        const r = runQuery(db, sql, { maxRows: opts.maxRows });
        for (const w of warnings) stderr().write(`sluice: warning: ${w.code}: ${w.message}\n`);
        const rows = r.rows.map((row) => row.map(toJsonValue));
        emit(opts, S.queryOutput, { columns: r.columns, rows, changes: r.changes, ...(warnings.length === 0 ? {} : { warnings }) }, () => {
          if (r.columns.length === 0) return `${r.changes} row(s) changed`;
          const lines = rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, row[i]]))).map((o) => JSON.stringify(o));
          return lines.length === 0 ? '(no rows)' : lines.join('\n');
        });
      } finally {
        db.close();
      }
    });
}
