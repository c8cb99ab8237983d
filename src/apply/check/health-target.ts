import type { Db } from '../../sqlite/index.ts';
import {
  compileProjection,
  ownedTables,
  type SourceShape,
  kindNamed,
  kindOf,
  parseStoredDefinition,
  type CompiledProjection,
} from '../../projection/index.ts';
import type { ProjectionRecord } from '../target/index.ts';
import { cachedStatement, connectionState, quoteIdent, repairAction, slot } from '../../sqlite/index.ts';

/*
 * What health can see of a projection's own tables without reading their
 * rows: a table that is missing (dropped by hand; of the kinds whose tables
 * sluice makes, not a custom handler's, which makes them when it chooses), for mirror and map
 * projections a table whose columns are not the definition's (a column
 * added, dropped or renamed by hand), and a table without a key the kind's
 * writes need (keyedBy: a mirror's or map's key, an fts5 index's key table's
 * rowid and key; made again by hand). Rows edited by hand, other indexes, and an
 * fts5 index's columns are not looked at: `sluice verify` compares rows.
 */

/** Problems with the projection's tables in the target, each with the command that repairs it. */
export function targetTableProblems(
  target: Db,
  r: ProjectionRecord,
  sourcePath: string | undefined,
  targetPath: string,
  schema = 'main',
  /** False: only tables that are missing (verify compares the rows of the rest, and the columns it reads). */
  columns = true,
): string[] {
  if (r.cursor === null || r.state === 'suspended') return [];
  const repair = () => repairAction(r.name, 'TARGET_TABLE_CHANGED', sourcePath, targetPath, r.sourceTable);
  const problems: string[] = [];
  for (const t of kindNamed(r.kind)?.makesTables === true ? ownedTables(r) : []) {
    const exists =
      target.prepare(`SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`).get(t) !==
      undefined;
    if (!exists) problems.push(`table ${t} of projection ${r.name} is missing from the target (dropped by hand?); ${repair()}`);
  }
  if (problems.length > 0 || !columns) return problems;
  const p = storedProjection(r);
  if (p === undefined) return problems;
  const unkeyed = () => {
    const u = keyProblem(target, schema, p);
    if (u !== undefined) problems.push(`${u.message}; ${repair()}`);
    return problems;
  };
  if (kindNamed(r.kind)?.checksColumns !== true) return unkeyed();
  const expected = p.columns.map((c) => c.name);
  const actual = target
    .prepare(`SELECT name FROM ${quoteIdent(schema)}.pragma_table_info(?)`)
    .pluck()
    .all(r.targetTable) as string[];
  const fold = (xs: readonly string[]) => new Set(xs.map((x) => x.toLowerCase()));
  const want = fold(expected);
  const have = fold(actual);
  const extra = actual.filter((c) => !want.has(c.toLowerCase()));
  const missing = expected.filter((c) => !have.has(c.toLowerCase()));
  if (extra.length > 0 || missing.length > 0) {
    const parts = [
      ...(extra.length > 0 ? [`not in the definition: ${extra.join(', ')}`] : []),
      ...(missing.length > 0 ? [`missing: ${missing.join(', ')}`] : []),
    ];
    problems.push(
      `table ${r.targetTable} of projection ${r.name} has other columns than its definition (${parts.join('; ')}): edited by hand?; ${repair()}`,
    );
    return problems;
  }
  return unkeyed();
}

/**
 * What is wrong when a table of the projection has no key its kind's
 * writes need (keyedBy: a mirror's or map's key, which sync replaces rows
 * by with INSERT OR REPLACE; an fts5 key table's rowid and key): the
 * table, its key and the message. Undefined when each has its key. sync
 * asks before each batch it applies (a suspension, so that nothing is
 * written wrong), health for each projection; the answer is kept while the
 * schema is unchanged.
 */
export function keyProblem(
  db: Db,
  schema: string,
  p: CompiledProjection,
): { readonly table: string; readonly key: readonly string[]; readonly message: string } | undefined {
  for (const k of kindOf(p).keyedBy(p)) {
    if (hasKey(db, schema, k.table, k.key, k.rowid === true)) continue;
    const lacks =
      k.rowid === true ? `no INTEGER PRIMARY KEY ${k.key.join(', ')}` : `no PRIMARY KEY or UNIQUE index on its key (${k.key.join(', ')})`;
    return {
      table: k.table,
      key: k.key,
      message: `table ${k.table} of projection ${p.name} has ${lacks}, ${k.uses} (made again by hand, by CREATE TABLE ... AS SELECT?), so ${k.without}`,
    };
  }
  return undefined;
}

/** Per schema of a connection: its schema_version when the answers were read, and whether each table (with its key) has the key. */
const keyAnswers = slot('target-key-answers', () => new Map<string, { version: number; answers: Map<string, boolean> }>());

function hasKey(db: Db, schema: string, table: string, key: readonly string[], rowid: boolean): boolean {
  const version = Number(cachedStatement(db, `PRAGMA ${quoteIdent(schema)}.schema_version`, 'pluck').get() as number | bigint);
  const all = connectionState(db).get(keyAnswers);
  let at = all.get(schema);
  if (at === undefined || at.version !== version) all.set(schema, (at = { version, answers: new Map() }));
  const id = JSON.stringify([table, key, rowid]);
  let answer = at.answers.get(id);
  if (answer === undefined) at.answers.set(id, (answer = keyed(db, schema, table, key, rowid)));
  return answer;
}

/**
 * Whether `table` has a PRIMARY KEY, or a UNIQUE index that is not partial,
 * on exactly the columns `key` (in any order), as sluice makes its tables
 * (or is missing: no key to miss). `rowid`: only an INTEGER PRIMARY KEY on
 * the one column (the table's rowid) counts.
 */
function keyed(db: Db, schema: string, table: string, key: readonly string[], rowid: boolean): boolean {
  const want = [...key].map((k) => k.toLowerCase()).sort();
  const same = (cols: readonly string[]) =>
    cols.length === want.length &&
    [...cols]
      .map((c) => c.toLowerCase())
      .sort()
      .every((c, i) => c === want[i]);
  // The schema as the pragma's argument: a schema before the function's name does not choose where the table is looked up
  // (sync's connection has the source's table of the same name in main).
  const columns = db.prepare('SELECT name, type, pk FROM pragma_table_info(?, ?)').all(table, schema) as {
    name: string;
    type: string;
    pk: number | bigint;
  }[];
  // A table that is missing is another problem (targetTableProblems says it; sync's statements fail naming it).
  if (columns.length === 0) return true;
  const pk = columns.filter((c) => Number(c.pk) > 0);
  if (rowid) return pk.length === 1 && same(pk.map((c) => c.name)) && pk[0]?.type.toUpperCase() === 'INTEGER';
  if (same(pk.map((c) => c.name))) return true;
  const indexes = db
    .prepare('SELECT name FROM pragma_index_list(?, ?) WHERE "unique" = 1 AND partial = 0')
    .pluck()
    .all(table, schema) as string[];
  return indexes.some((i) => same(db.prepare('SELECT name FROM pragma_index_info(?, ?)').pluck().all(i, schema) as string[]));
}

/** The stored definition of `r` compiled over its stored source shape, or undefined when it cannot be compiled here. */
function storedProjection(r: ProjectionRecord): CompiledProjection | undefined {
  try {
    return compileProjection(
      parseStoredDefinition(r.definition, `stored definition of ${r.name}`),
      JSON.parse(r.sourceShape) as SourceShape,
    );
  } catch {
    return undefined;
  }
}
