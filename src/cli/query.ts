import type { Command } from 'commander';
import { InvalidInputError, openDatabase, runQuery, toJsonValue, type Db } from '../index.ts';
import {
  ownObjects,
  ownObjectsChanged,
  ownTablesWritten,
  projectionWrites,
  allowProjectionWrites,
  foldIdent,
  GUARD_PREFIX,
  isProtected,
  projectionOwners,
  readQuietly,
  refuseProjectionWrites,
  shellWord,
  triggerWriteFix,
  triggerWriteText,
  userTriggerWrites,
  type TriggerWrite,
  type ProjectionWrite,
} from '../internal.ts';
import { stderr } from './closed-pipe.ts';
import { parseWholeNumber } from './enable.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

/**
 * A read runs on a read-only connection: it writes nothing, not even a
 * checkpoint when it closes (and the file is held while it runs, so that
 * no -wal or -shm is left: readQuietly). A write gets a writable one, with
 * recursive_triggers at SQLite's default (off), so the user's own triggers
 * (an AFTER UPDATE that touches updated_at) behave as in the user's app.
 * Neither changes the journal mode. On a protected target both define the
 * guards' function to refuse (refuseProjectionWrites): a write to a
 * guarded table compiles, so it is found and refused, naming the table.
 */
function openForQuery(dbPath: string, sql: string): Db {
  const reader = openDatabase(dbPath, { role: 'database', readonly: true });
  refuseProjectionWrites(reader);
  let write: boolean;
  try {
    write = !reader.prepare(sql).readonly;
  } catch {
    return reader; // runQuery reports BAD_SQL
  }
  if (!write) return reader;
  reader.close();
  const writer = openDatabase(dbPath, { role: 'database', recursiveTriggers: false });
  refuseProjectionWrites(writer);
  return writer;
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
    // The file held while the statement runs (readQuietly): a read on a read-only connection of a WAL file would leave a -wal and -shm.
    .action((dbPath: string, sql: string, opts: { maxRows: number; json?: boolean }) =>
      readQuietly([dbPath], () => runOne(dbPath, sql, opts)),
    );
}

/** sluice query, its file held. */
function runOne(dbPath: string, sql: string, opts: { maxRows: number; json?: boolean }): void {
  const db = openForQuery(dbPath, sql);
  try {
    // sluice's own tables are sluice's to write (capture/own-objects.ts): refused before the statement runs, and a
    // statement that makes, drops or changes one of sluice's objects (DDL, or DDL on a captured table that rewrites its
    // triggers) rolled back.
    const own = db.readonly ? [] : ownTablesWritten(db, sql);
    if (own.length > 0) throw ownTablesRefused(dbPath, own);
    // A protected target's projection tables are sluice's alone to write: refused before the statement runs.
    const guarded = db.readonly || !isProtected(db, 'main') ? [] : projectionWrites(db, sql);
    if (guarded.length > 0) throw protectedRefused(dbPath, sql, guarded);
    const objects = db.readonly ? undefined : ownObjects(db);
    const guards = db.readonly ? new Map<string, string>() : guardedTables(db);
    const beforeCommit = () => {
      const changed = objects === undefined ? [] : ownObjectsChanged(objects, ownObjects(db));
      if (changed.length > 0) throw ownObjectsRefused(db, dbPath, sql, changed, guards);
    };
    // A write to a projection's table is the user's to make, but it makes the projection no longer its source's.
    const warnings: QueryWarning[] = (db.readonly ? [] : projectionWrites(db, sql)).map((w) => ({
      code: 'WRITES_PROJECTION',
      projection: w.projection,
      table: w.table,
      message: `this statement writes table ${w.table} of projection ${w.projection}: its rows are no longer its source's, and sluice suspends it once it sees the edit (TARGET_EDITED: a running sync --follow at once, else sluice verify). Change the source or the projection's definition instead, or rebuild it afterwards with sluice reinit`,
    }));
    // A trigger it makes (or changes) whose program writes another projection's table when sluice writes a projection's:
    // sync refuses to apply that projection while it is there (USER_TRIGGER_WRITES_PROJECTION), so it is said now.
    const triggersBefore = db.readonly ? undefined : triggerTexts(db);
    let r: ReturnType<typeof runQuery>;
    try {
      r = runQuery(db, sql, { maxRows: opts.maxRows, beforeCommit });
    } catch (err) {
      // DDL that sluice's own objects stop (DROP COLUMN of a column a capture trigger names): SQLite refuses it with
      // the trigger's name; it is the same refusal, nothing committed.
      const own = /error in (?:trigger|view|index) (_sluice_\w*)/i.exec(err instanceof Error ? err.message : '');
      if (own?.[1] !== undefined) throw ownObjectsRefused(db, dbPath, sql, [own[1]], guards, err);
      throw err;
    }
    for (const w of triggersBefore === undefined ? [] : newTriggerWrites(db, triggersBefore))
      warnings.push({
        code: 'USER_TRIGGER_WRITES_PROJECTION',
        projection: w.fired.projection,
        table: w.table,
        trigger: w.trigger,
        on: w.on,
        owner: w.projection,
        message: `${triggerWriteText(w)} whenever sluice writes table ${w.fired.table} of projection ${w.fired.projection}, inside sluice's own transaction (where neither sluice protect's guards nor the hand-edit watch see it): sync, import and subscribe apply nothing to projection ${w.fired.projection} while it is there (suspended), or it would change ${w.projection === null ? "sluice's own bookkeeping" : `projection ${w.projection}`} behind sluice's back. To keep ${w.fired.projection} in sync, ${triggerWriteFix(w, dbPath)}`,
      });
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
}

/** What query warns of (`warnings` in --json). */
interface QueryWarning {
  readonly code: string;
  readonly projection: string;
  readonly table: string;
  readonly message: string;
  readonly trigger?: string;
  readonly on?: string;
  readonly owner?: string | null;
}

/** The triggers of `db`'s main database: each one's SQL by its name (folded). */
function triggerTexts(db: Db): Map<string, string> {
  const rows = db.prepare("SELECT name, sql FROM main.sqlite_schema WHERE type = 'trigger'").raw().all() as [string, string | null][];
  return new Map(rows.map(([name, sql]) => [foldIdent(name), sql ?? '']));
}

/**
 * The user's triggers that write another projection's table (or sluice's
 * own) when a projection's table is written (userTriggerWrites), made or
 * changed since `before` (triggerTexts): the trigger that writes, or a
 * trigger on the projection's table that starts the chain to it. Compiled
 * with sluice's guard function registered (a protected target's guards
 * call it): the statement has run, and the connection is closed next.
 */
function newTriggerWrites(db: Db, before: ReadonlyMap<string, string>): TriggerWrite[] {
  const after = triggerTexts(db);
  const changed = new Set([...after].filter(([name, sql]) => before.get(name) !== sql).map(([name]) => name));
  if (changed.size === 0) return [];
  const on = new Map(
    (db.prepare("SELECT name, tbl_name FROM main.sqlite_schema WHERE type = 'trigger'").raw().all() as [string, string][]).map(
      ([name, table]) => [foldIdent(name), foldIdent(table)],
    ),
  );
  allowProjectionWrites(db);
  return userTriggerWrites(db, 'main').filter(
    (w) => changed.has(foldIdent(w.trigger)) || [...changed].some((name) => on.get(name) === foldIdent(w.fired.table)),
  );
}

/** A statement that writes sluice's own tables itself (ownTablesWritten): refused before it runs. */
function ownTablesRefused(file: string, tables: readonly string[]): InvalidInputError {
  return new InvalidInputError(
    'QUERY_REFUSED',
    `Query on ${file}: the statement writes ${tables.join(', ')}, sluice's own (the capture's record on a source, the projections' state on a target), which only sluice writes. Nothing was run. To stop capture use sluice disable, to remove a projection sluice drop, to clear old acknowledgements sluice forget or sluice prune.`,
    { exitCode: 2 },
  );
}

/** The guard triggers of a protected target (sluice protect), each one's table by its name. */
function guardedTables(db: Db): Map<string, string> {
  const rows = db
    .prepare("SELECT name, tbl_name FROM main.sqlite_schema WHERE type = 'trigger' AND substr(name, 1, ?) = ?")
    .raw()
    .all(GUARD_PREFIX.length, GUARD_PREFIX) as [string, string][];
  return new Map(rows);
}

/** Whether `sql` is DDL (CREATE, DROP, ALTER), after leading whitespace and comments. */
function isDdl(sql: string): boolean {
  const rest = sql.replace(/^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?(?:\*\/|$))*/, '');
  return /^(?:CREATE|DROP|ALTER)\b/i.test(rest);
}

/** The fix for DDL on projection tables of target `file`: a projection's tables are made and dropped with it. */
function projectionDdlFix(file: string, projections: readonly string[]): string {
  const drops = projections.map((p) => `sluice drop ${shellWord(file)} ${shellWord(p)}`).join(', or ');
  return `A projection's tables are sluice's: to remove them, remove the projection (${drops}); to change their shape, change the projection's definition, or its table in the source, and run sluice sync, which rebuilds them`;
}

/** A statement that writes a protected target's projection tables (projectionWrites): refused before it runs. */
function protectedRefused(file: string, sql: string, writes: readonly ProjectionWrite[]): InvalidInputError {
  const what = writes.map((w) => `table ${w.table} of projection ${w.projection}`).join(', ');
  const ddl = isDdl(sql);
  const fix = ddl
    ? `${projectionDdlFix(file, [...new Set(writes.map((w) => w.projection))])}.`
    : `Change the rows in the source and run sluice sync, which brings them here; or, to edit them by hand, take the protection off first (sluice protect ${shellWord(file)} --off): sluice then suspends the projection once it sees the edit (TARGET_EDITED) until sluice reinit rebuilds it.`;
  return new InvalidInputError(
    'QUERY_REFUSED',
    `Query on ${file}: target ${file} is protected (sluice protect), and the statement ${ddl ? 'drops or changes' : 'writes'} ${what}, which only sluice writes there. Nothing was run. ${fix}`,
    { exitCode: 2 },
  );
}

/**
 * A statement that made, dropped or changed sluice's objects (ownObjectsChanged): rolled back. On a source, DDL on a
 * captured table goes through sluice alter; on a target, a projection's tables go with the projection (`guards`: the
 * guard triggers of a protected target and their tables, which DDL on a guarded table drops or rewrites).
 */
function ownObjectsRefused(
  db: Db,
  file: string,
  sql: string,
  objects: readonly string[],
  guards: ReadonlyMap<string, string>,
  cause?: unknown,
): InvalidInputError {
  const owners = projectionOwners(db, 'main');
  const projections = [
    ...new Set(
      objects.flatMap((o) => {
        const table = guards.get(o);
        const w = table === undefined ? undefined : owners.get(foldIdent(table));
        return w === undefined ? [] : [w.projection];
      }),
    ),
  ];
  const fix =
    projections.length > 0
      ? projectionDdlFix(file, projections)
      : owners.size > 0
        ? `On a target, sluice's own tables go with its projections: sluice drop ${shellWord(file)} PROJECTION (sluice health lists them)`
        : `DDL on a captured table goes through sluice alter ${shellWord(file)} ${shellWord(sql)}, which keeps its capture in step; sluice's own tables go with sluice disable (a source) or sluice drop (a target's projections)`;
  return new InvalidInputError(
    'QUERY_REFUSED',
    `Query on ${file}: the statement would make, drop or change sluice's own ${objects.join(', ')}, so it was rolled back and nothing was committed. ${fix}.`,
    { exitCode: 2, ...(cause === undefined ? {} : { cause }) },
  );
}
