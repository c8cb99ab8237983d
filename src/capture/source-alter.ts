import type { Db } from '../sqlite/index.ts';
import { SluiceError } from '../errors.ts';
import {
  describeTable,
  schemaVersion,
  type TableInfo,
  forEachStatement,
  isBlank,
  writeTransactionSync,
  foldIdent,
  quoteIdent,
  quoteString,
  shellWord,
} from '../sqlite/index.ts';
import { highWaterMark, readState, readTables, type CapturedTable } from './catalog.ts';
import { placeMark, recordOwnDdl } from './enable.ts';
import { arm } from './arm.ts';
import { captureFingerprint } from './table-fingerprint.ts';
import { checkForeignKeys, checkNamespace, checkTable } from './gates.ts';
import { guardInputs } from './guard-inputs.ts';
import { withoutExcluded } from './excluded.ts';
import { enableCommand, rearmFixAll } from './enable-hint.ts';
import { appendDdl, ensureDdlLog, type DdlTableRecord } from './ddl-log.ts';
import { AlterRefusedError, GUARD_MARK, checkStatement, guardRefusal, statementLabel } from './alter-rules.ts';
import { ColumnLineage, keepsEveryName } from './alter-lineage.ts';
import { STATE_TABLE, TABLES_TABLE, triggerNames } from './schema.ts';
import { forgetArming, verifyCapture } from './arming.ts';
import { RUN_ON_SOURCE, refuseTarget } from './target-guard.ts';

export interface AlterOptions {
  /** Run the script and report, then roll everything back. */
  readonly dryRun?: boolean;
  /**
   * Called in the alter's transaction once the script ran and capture is
   * armed again and the alter recorded, before the commit (or, with
   * dryRun, the rollback): it sees the source as the alter leaves it. It
   * must not write. A throw rolls the alter back. (alter --target forecasts
   * each projection of a target here: src/apply/evolution/alter-targets.ts.)
   */
  readonly inspect?: (db: Db, result: AlterResult) => void;
}

/** A captured table the script changed (see TableChange). */
export interface AlteredTable {
  readonly table: string;
  readonly change: DdlTableRecord['change'];
  readonly columnsBefore: readonly string[];
  readonly columnsAfter: readonly string[];
  /** Columns that are new: a name dropped and added again is in both `removed` and `added` (it is another column). */
  readonly added: readonly string[];
  /** Columns that are gone (dropped, or made another column under their name). */
  readonly removed: readonly string[];
  /** Columns the script renamed (RENAME COLUMN, recorded as it ran): the same column under a new name. */
  readonly renamed: readonly { readonly from: string; readonly to: string }[];
}

export interface AlterResult {
  readonly dryRun: boolean;
  /** How many statements the script had (all ran). */
  readonly statements: number;
  readonly tables: readonly AlteredTable[];
  /** The journal's high-water mark at the alter: the tables' events up to it are in their old layout. */
  readonly seq: number;
  /** The generation after: unchanged unless a table was rebuilt (then only that table's readers rebuild). */
  readonly generation: number;
}

/**
 * Runs DDL on a captured source in one BEGIN IMMEDIATE transaction with the
 * capture changes it needs: the capture triggers are taken out of the way,
 * the statements run (foreign_keys off, checked at the end), every captured
 * table is armed again against its new shape, and the alter is recorded in
 * `_sluice_ddl` and as sluice's own DDL (no schema window). Writers wait for
 * the transaction, so no write escapes the journal. An in-place change
 * (ADD/DROP/RENAME COLUMN, an index) keeps the generation; a table the
 * script rebuilds is a new identity, and only its readers rebuild. A script
 * that fails or is refused changes nothing.
 *
 * @example
 * alter(db, 'ALTER TABLE issues DROP COLUMN legacy_flag');
 * const plan = alter(db, 'ALTER TABLE issues ADD COLUMN due TEXT', { dryRun: true });
 * forecastAlter(db, plan); // what each known consumer will do
 */
export function alter(db: Db, ddl: string, options: AlterOptions = {}): AlterResult {
  const name = db.name;
  if (readState(db) === undefined) {
    // A sync target has no capture either: say it is one, and the file it is synced from (TARGET_NOT_SOURCE).
    refuseTarget(db, name, RUN_ON_SOURCE);
    throw new SluiceError('CAPTURE_ABSENT', `${name} has no sluice capture; run the DDL with any tool, or enable capture first.`, {
      exitCode: 3,
    });
  }
  if (isBlank(ddl))
    throw new AlterRefusedError(
      `sluice alter ${name}: the DDL is empty. Pass the statements, e.g. "ALTER TABLE issues ADD COLUMN due TEXT".`,
    );
  if (db.inTransaction) throw new AlterRefusedError(`sluice alter ${name}: the connection is inside a transaction; alter runs its own.`);
  const fk = Number(db.pragma('foreign_keys', { simple: true })) === 1;
  db.pragma('foreign_keys = OFF');
  try {
    // A dry run is rolled back, and returns what it found.
    return writeTransactionSync(
      db,
      () => {
        const result = run(db, ddl, options.dryRun === true, fk);
        options.inspect?.(db, result);
        return result;
      },
      { mode: 'immediate', keep: () => options.dryRun !== true },
    );
  } finally {
    forgetArming(db);
    if (fk) db.pragma('foreign_keys = ON');
  }
}

interface Before {
  readonly table: CapturedTable;
  readonly info: TableInfo;
}

function run(db: Db, ddl: string, dryRun: boolean, fk: boolean): AlterResult {
  const name = db.name;
  checkNamespace(db);
  const v = verifyCapture(db);
  // A captured table that is gone (dropped, by an earlier alter or anyone) stays unarmed and is left out.
  const gone = new Set(v.tables.filter((t) => !t.armed && t.reason === 'TABLE_MISSING').map((t) => t.table.tid));
  const unarmed = v.tables.filter((t) => !t.armed && !gone.has(t.table.tid));
  if (unarmed.length > 0) {
    // The fix names each table, as status and health do: enable with a file and no table is a usage error.
    const one = unarmed.length === 1;
    const what = unarmed.map((u) => `${u.table.name} (${u.reason ?? 'unarmed'}: ${u.detail ?? ''})`);
    const fix = rearmFixAll(
      name,
      unarmed.map((u) => ({ table: u.table.name, reason: u.reason, exclude: u.exclude })),
    );
    throw new AlterRefusedError(
      `sluice alter ${name}: ${one ? 'table' : 'tables'} ${listed(what)} ${one ? 'is' : 'are'} not armed, so alter cannot tell ${one ? 'its' : 'their'} readers what changed. Fix: ${fix} (${one ? 'its' : 'their'} readers rebuild once), then sluice alter again. Nothing was changed.`,
    );
  }
  const svBefore = schemaVersion(db);
  const hw = highWaterMark(db);
  const before: Before[] = readTables(db)
    .filter((table) => !gone.has(table.tid))
    .map((table) => ({ table, info: describeTable(db, table.name) as TableInfo }));
  for (const { table } of before) {
    for (const t of Object.values(triggerNames(table.tid))) db.exec(`DROP TRIGGER IF EXISTS main.${quoteIdent(t)}`);
    for (const op of ['INSERT', 'UPDATE', 'DELETE']) {
      db.exec(
        `CREATE TEMP TRIGGER ${quoteIdent(guardName(table.tid, op))} BEFORE ${op} ON main.${quoteIdent(table.name)} BEGIN SELECT RAISE(ABORT, ${quoteString(`${GUARD_MARK} ${table.name}`)}); END`,
      );
    }
  }
  const tempBefore = tempSchema(db);
  const vanished = new Set<string>();
  const lineage = new ColumnLineage(
    before.map(({ table, info }) => ({ tid: table.tid, name: table.name, sql: info.sql, columns: info.columns.map((c) => c.name) })),
  );
  const statements = forEachStatement(db, ddl, (text, index) => {
    checkStatement(name, index, text);
    try {
      const stmt = db.prepare(text);
      if (stmt.reader) stmt.all();
      else stmt.run();
    } catch (err) {
      if (err instanceof Error && err.message.includes(GUARD_MARK)) throw guardRefusal(name, index, text, err);
      throw new SluiceError(
        'ALTER_FAILED',
        `sluice alter ${name}: ${statementLabel(index, text)} failed: ${(err as Error).message}. Fix the statement and run sluice alter again. Nothing was changed (the whole script is one transaction).`,
        { cause: err },
      );
    }
    const present = new Set(
      (db.prepare("SELECT name FROM main.sqlite_schema WHERE type = 'table'").pluck().all() as string[]).map((n) => n),
    );
    for (const b of before) if (!present.has(b.table.name)) vanished.add(b.table.name);
    lineage.afterStatement(db, text);
  });
  for (const { table } of before)
    for (const op of ['INSERT', 'UPDATE', 'DELETE']) db.exec(`DROP TRIGGER IF EXISTS temp.${quoteIdent(guardName(table.tid, op))}`);
  if (tempSchema(db) !== tempBefore)
    throw new AlterRefusedError(
      `sluice alter ${name}: the script made or changed TEMP objects, which live only as long as alter's connection. Make them in the main database. Nothing was changed.`,
    );
  checkNamespace(db);
  const excludedAfter = new Map<number, string[]>();
  const records = classify(db, before, vanished, lineage, excludedAfter);
  const state = readState(db) as { generation: number };
  let generation = state.generation;
  const rebuilt = records.filter((r) => r.change === 'rebuilt').map((r) => r.table);
  if (rebuilt.length > 0) {
    generation++;
    db.prepare(`UPDATE ${STATE_TABLE} SET generation = ?, updated_ms = ?, last_reason = ? WHERE id = 1`).run(
      generation,
      Date.now(),
      `alter rebuilt ${rebuilt.join(', ')}`,
    );
  }
  const present = before.filter((b) => !records.some((r) => r.tid === b.table.tid && r.change === 'dropped'));
  const infos = present.map((b) => ({ b, info: checkAfter(db, b.table.name) }));
  checkForeignKeysAfter(
    db,
    infos.map((x) => x.info.name),
  );
  if (fk) checkReferences(db);
  for (const { b, info } of infos) {
    arm(db, b.table.tid, info, b.table.mode, b.table, excludedAfter.get(b.table.tid) ?? b.table.excluded);
    const r = records.find((x) => x.tid === b.table.tid);
    // Unchanged tables keep their arming; altered ones keep their generation (their rows are the same),
    // and start their new layout at hw; rebuilt ones are armed at the new generation.
    const armedGeneration = r?.change === 'rebuilt' ? generation : b.table.armedGeneration;
    const armedSeq = r === undefined ? b.table.armedSeq : hw;
    db.prepare(`UPDATE ${TABLES_TABLE} SET armed_generation = ?, armed_seq = ? WHERE tid = ?`).run(armedGeneration, armedSeq, b.table.tid);
  }
  ensureDdlLog(db);
  recordOwnDdl(db, svBefore); // makes _sluice_schema where it is missing, before the span is read
  placeMark(db);
  const svAfter = schemaVersion(db);
  appendDdl(db, { seq: hw, ms: Date.now(), svBefore, svAfter, tables: records, sql: ddl }, readState(db)?.prunedThrough ?? 0);
  recordOwnDdl(db, svBefore);
  forgetArming(db);
  return {
    dryRun,
    statements,
    tables: records.map(describeChange),
    seq: hw,
    generation,
  };
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

function guardName(tid: number, op: string): string {
  return `_sluice_alter_${tid}_${op.toLowerCase()}`;
}

function tempSchema(db: Db): string {
  return JSON.stringify(
    db
      .prepare("SELECT type, name, sql FROM temp.sqlite_schema WHERE name NOT LIKE '\\_sluice\\_alter\\_%' ESCAPE '\\' ORDER BY name")
      .all(),
  );
}

/**
 * What the script did to each captured table (unchanged ones are left out),
 * with which column each column after is. A table whose columns read the
 * same as before by name, type and position, but one of which was dropped
 * and added again (or renamed onto another's name), changed all the same.
 */
function classify(
  db: Db,
  before: readonly Before[],
  vanished: ReadonlySet<string>,
  lineage: ColumnLineage,
  excludedAfter: Map<number, string[]>,
): DdlTableRecord[] {
  const out: DdlTableRecord[] = [];
  for (const { table, info } of before) {
    const after = describeTable(db, table.name);
    // The columns in the journal's layout: the captured ones (excluded columns are in no image).
    const base = {
      table: table.name,
      tid: table.tid,
      from: table.fingerprint,
      columnsBefore: withoutExcluded(info, table.excluded).columns.map((c) => c.name),
    };
    if (after === undefined) {
      out.push({ ...base, change: 'dropped', to: null, columnsAfter: [], columnsFrom: [] });
      continue;
    }
    const to = captureFingerprint(after, guardInputs(db, table.name).uniques);
    const allAfter = after.columns.map((c) => c.name);
    // A table made again under its name is a new identity: none of its columns is one it had.
    const allFrom = vanished.has(table.name) ? allAfter.map(() => null) : lineage.columnsFrom(table.tid, allAfter);
    // A column left out stays left out under a new name (its lineage), and a table made again leaves out the same names.
    // The names stay left out too: one the table no longer has (dropped or renamed, now or by an earlier alter) is kept.
    const was = new Set(table.excluded.map(foldIdent));
    if (vanished.has(table.name)) {
      // A new table's columns have no lineage: one named as a captured column may hold a gone excluded one's values.
      const live = new Set(allAfter.map(foldIdent));
      const had = new Set(info.columns.map((c) => foldIdent(c.name)));
      const gone = table.excluded.filter((c) => had.has(foldIdent(c)) && !live.has(foldIdent(c)));
      if (gone.length > 0)
        throw new AlterRefusedError(
          `sluice alter ${db.name}: the script makes ${table.name} again without ${gone.join(', ')}, which is left out of capture; any column of the new table may hold its values, and capture would journal them. Keep the name in the new table, or run the script outside sluice alter: ${table.name} then stays unarmed until enable names the columns to leave out, e.g. ${enableCommand(db.name, [table.name])} --exclude ${shellWord(
            after.columns
              .filter((c) => c.pkIndex === 0)
              .map((c) => c.name)
              .join(','),
          )} (every column but the key; name the ones to leave out). Nothing was changed.`,
        );
    }
    const out_ = allAfter.filter((c, i) => was.has(foldIdent(allFrom[i] ?? c)) || was.has(foldIdent(c)));
    // A name left out stays left out when the table no longer has it, so that a later alter (or anyone) adding a
    // column under it does not capture that column.
    const afterNames = new Set(allAfter.map(foldIdent));
    excludedAfter.set(table.tid, [...out_, ...table.excluded.filter((c) => !afterNames.has(foldIdent(c)))]);
    const keep = (_: unknown, i: number) => !out_.includes(allAfter[i] as string);
    const columnsAfter = allAfter.filter(keep);
    const columnsFrom = allFrom.filter(keep);
    if (vanished.has(table.name)) out.push({ ...base, change: 'rebuilt', to, columnsAfter, columnsFrom });
    else if (to !== table.fingerprint || after.sql !== info.sql || !keepsEveryName(columnsFrom, base.columnsBefore, columnsAfter))
      out.push({ ...base, change: 'altered', to, columnsAfter, columnsFrom });
  }
  return out;
}

/** With foreign keys on (as the connection had them), every reference must still hold: the 12-step procedure's last check. */
function checkReferences(db: Db): void {
  let bad: { table: string; parent: string }[];
  try {
    bad = db.prepare('SELECT * FROM pragma_foreign_key_check').all() as { table: string; parent: string }[];
  } catch (err) {
    throw new AlterRefusedError(
      `sluice alter ${db.name}: after the script, a foreign key no longer fits its parent (${(err as Error).message}). Fix the script so that each parent key is a PRIMARY KEY or UNIQUE. Nothing was changed.`,
      { cause: err },
    );
  }
  if (bad.length > 0)
    throw new AlterRefusedError(
      `sluice alter ${db.name}: after the script, ${bad.length} row(s) of ${bad[0]?.table} break a foreign key to ${bad[0]?.parent} (PRAGMA foreign_key_check). Fix the script so that every reference still holds. Nothing was changed.`,
    );
}

function checkAfter(db: Db, table: string): TableInfo {
  try {
    return checkTable(db, table);
  } catch (err) {
    throw new AlterRefusedError(
      `sluice alter ${db.name}: after the script, table ${table} could no longer be captured: ${(err as Error).message} Nothing was changed.`,
      { cause: err },
    );
  }
}

function checkForeignKeysAfter(db: Db, tables: readonly string[]): void {
  try {
    checkForeignKeys(db, tables);
  } catch (err) {
    throw new AlterRefusedError(
      `sluice alter ${db.name}: after the script, capture's foreign-key rules would be broken: ${(err as Error).message} Nothing was changed.`,
      { cause: err },
    );
  }
}

function describeChange(r: DdlTableRecord): AlteredTable {
  const from = r.columnsFrom ?? r.columnsAfter.map(() => null);
  const kept = new Set(from.filter((f) => f !== null).map(foldIdent));
  return {
    table: r.table,
    change: r.change,
    columnsBefore: r.columnsBefore,
    columnsAfter: r.columnsAfter,
    added: r.columnsAfter.filter((_, i) => from[i] == null),
    removed: r.columnsBefore.filter((c) => !kept.has(foldIdent(c))),
    renamed: r.columnsAfter.flatMap((to, i) => {
      const f = from[i];
      return f != null && foldIdent(f) !== foldIdent(to) ? [{ from: f, to }] : [];
    }),
  };
}
