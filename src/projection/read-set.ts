import { openDatabase, type Db, foldIdent, quoteIdent } from '../sqlite/index.ts';
import { columnDecl, type SourceShape } from './compiled.ts';

/*
 * Which source columns a projection's SQL reads, as SQLite compiles it, not
 * as its text looks: an update that changes none of them cannot change the
 * projection's rows, so the applier may skip it (apply/sync/applier.ts).
 *
 * The probe is a statement that reads the source table the way the apply
 * does (relational/images.ts: every target column's expression and the
 * filter, over a table declared like the source), compiled on a private
 * in-memory connection. Its bytecode (EXPLAIN) says which columns it reads:
 * the `Column` opcodes on the one cursor opened on the table. Anything the
 * probe cannot account for makes the answer "every column" (undefined):
 * a subquery or a non-deterministic function (judged by SQLite itself: the
 * expression must be allowed as a generated column and evaluate on a row), a
 * second cursor on any table, the rowid, a function the probe connection
 * does not have, or any error at all.
 */

/** Probe results by shape and SQL: compiling a projection happens often, the answer never changes. */
const memo = new Map<string, readonly string[] | undefined>();
const MEMO_MAX = 512;
let probeDb: Db | undefined;

function connection(): Db {
  probeDb ??= openDatabase(':memory:', { create: true, role: 'read-set probe' });
  return probeDb;
}

/**
 * The source columns (names as the shape has them, in its order) whose
 * values the SQL `exprs` (and the row filter `filter`, null: none) read,
 * together with the key columns; undefined when that cannot be told (treat
 * it as every column). `computed` is the subset of `exprs` (and the filter)
 * that is not a plain column reference: those are checked for subqueries
 * and non-deterministic functions.
 */
export function columnsReadBySql(
  shape: SourceShape,
  exprs: readonly string[],
  filter: string | null,
  computed: readonly string[],
): readonly string[] | undefined {
  const key = JSON.stringify([shape.columns, shape.keyColumns, exprs, filter, computed]);
  if (memo.has(key)) return memo.get(key);
  let out: readonly string[] | undefined;
  try {
    out = probe(connection(), shape, exprs, filter, computed);
  } catch {
    out = undefined;
  }
  if (memo.size >= MEMO_MAX) memo.clear();
  memo.set(key, out);
  return out;
}

const PROBE = quoteIdent('_sluice_reads');
const GENERATED = quoteIdent('_sluice_reads_g');

/** Cursor-opening opcodes that read a table or index of the database (ephemeral and sorter cursors are the statement's own). */
const TABLE_OPENS = new Set(['OpenRead', 'OpenWrite', 'ReopenIdx', 'VOpen']);
/** Opcodes that read a table cursor's rowid or move it to a row other than the one it is on. */
const ROW_OPS = new Set([
  'Rowid',
  'SeekRowid',
  'NotExists',
  'DeferredSeek',
  'IdxRowid',
  'SeekGE',
  'SeekGT',
  'SeekLE',
  'SeekLT',
  'NotFound',
  'Found',
]);

function probe(
  db: Db,
  shape: SourceShape,
  exprs: readonly string[],
  filter: string | null,
  computed: readonly string[],
): readonly string[] | undefined {
  const cols = shape.columns.map((c) => `${quoteIdent(c.name)} ${columnDecl(c)}`);
  try {
    // SQLite's own judgment of each computed expression: a generated column
    // refuses subqueries, aggregates and non-deterministic functions
    // (random(), a function not marked deterministic); evaluating one row
    // catches the rest ('now').
    for (const sql of computed) {
      db.exec(`DROP TABLE IF EXISTS main.${GENERATED}`);
      db.exec(`CREATE TABLE main.${GENERATED} (${[...cols, `"_sluice_x" AS (${sql}) STORED`].join(', ')})`);
      db.exec(`INSERT INTO main.${GENERATED} DEFAULT VALUES`);
    }
    // Like the source, but with no primary key: every column is an ordinary
    // column, read by `Column` at its position (no rowid alias to map back).
    db.exec(`DROP TABLE IF EXISTS main.${PROBE}`);
    db.exec(`CREATE TABLE main.${PROBE} (${cols.join(', ')})`);
    const root = Number(db.prepare(`SELECT rootpage FROM main.sqlite_schema WHERE name = '_sluice_reads'`).pluck().get());
    const select = [...exprs, ...(filter === null ? [] : [`CASE WHEN ${filter} THEN 1 ELSE 0 END`])];
    const ops = db.prepare(`EXPLAIN SELECT ${select.length === 0 ? '1' : select.join(', ')} FROM main.${PROBE}`).all() as {
      opcode: string;
      p1: number | bigint;
      p2: number | bigint;
      p3: number | bigint;
    }[];
    let cursor: number | undefined;
    for (const op of ops) {
      if (!TABLE_OPENS.has(op.opcode)) continue;
      // One cursor, on the probe table of main: anything else is another table, or the table read twice (a subquery).
      if (op.opcode !== 'OpenRead' || Number(op.p2) !== root || Number(op.p3) !== 0 || cursor !== undefined) return undefined;
      cursor = Number(op.p1);
    }
    const read = new Set<number>();
    for (const op of ops) {
      if (Number(op.p1) !== cursor) continue;
      if (op.opcode === 'Column') read.add(Number(op.p2));
      else if (ROW_OPS.has(op.opcode)) return undefined;
    }
    const keys = new Set(shape.keyColumns.map(foldIdent));
    if ([...read].some((i) => i < 0 || i >= shape.columns.length)) return undefined;
    return shape.columns.filter((c, i) => read.has(i) || keys.has(foldIdent(c.name))).map((c) => c.name);
  } finally {
    db.exec(`DROP TABLE IF EXISTS main.${GENERATED}`);
    db.exec(`DROP TABLE IF EXISTS main.${PROBE}`);
  }
}

/**
 * The columns a custom definition declares it reads (`reads`), as the
 * shape names them, with the key; undefined when it declares none (every
 * column). `find` resolves a name (an error names an unknown one).
 */
export function declaredReads(
  shape: SourceShape,
  reads: readonly string[] | undefined,
  find: (name: string) => { readonly name: string },
): readonly string[] | undefined {
  if (reads === undefined) return undefined;
  const named = new Set([...reads.map((r) => find(r).name), ...shape.keyColumns].map(foldIdent));
  return shape.columns.filter((c) => named.has(foldIdent(c.name))).map((c) => c.name);
}
