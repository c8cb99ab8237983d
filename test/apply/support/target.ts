import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { openDatabase, type Db, quoteIdent } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import type { CaptureMode } from '../../../src/capture/index.ts';
import { ROOT } from '../../support/fixtures.ts';

/*
 * Helpers for the applier tests. Rows are compared as cells `class:HEX`, by
 * storage class and bytes, never through a JS string or a collation. hex()
 * of a REAL goes through its text rendering (15 digits), so a REAL cell is
 * its 8 IEEE-754 bytes, read from the driver (which returns the exact double).
 */

export type Cell = string;

function realCell(v: unknown): Cell {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(Number(v));
  return `real:${b.toString('hex').toUpperCase()}`;
}

export function columnsOf(db: Db, schema: string, table: string): string[] {
  return (db.prepare('SELECT name FROM main.pragma_table_info(?, ?) ORDER BY cid').all(table, schema) as { name: string }[]).map(
    (r) => r.name,
  );
}

/** Every row of `schema.table` as cells, sorted (so two tables with the same rows compare equal). */
export function tableCells(db: Db, schema: string, table: string, columns: readonly string[] = columnsOf(db, schema, table)): Cell[][] {
  if (columns.length === 0) throw new Error(`no table ${schema}.${table}`);
  const sel = columns.map((c, i) => {
    const q = quoteIdent(c);
    return `typeof(${q}) AS t${i}, hex(${q}) AS h${i}, CASE WHEN typeof(${q}) = 'real' THEN ${q} END AS r${i}`;
  });
  const rows = db.prepare(`SELECT ${sel.join(', ')} FROM ${quoteIdent(schema)}.${quoteIdent(table)}`).all() as Record<string, unknown>[];
  const cells = rows.map((r) =>
    columns.map((_, i) => (r[`t${i}`] === 'real' ? realCell(r[`r${i}`]) : `${String(r[`t${i}`])}:${String(r[`h${i}`])}`)),
  );
  // Sort keys made once: rows may hold megabyte BLOBs.
  return cells
    .map((c) => ({ c, k: c.join('|') }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .map((x) => x.c);
}

export interface DumpOptions {
  /** Leave out wall-clock columns (created_ms, updated_ms), to compare two targets built at different times. */
  readonly omitClock?: boolean;
}

/**
 * Every ordinary table of a database (including sluice's metadata and the
 * FTS5 shadow tables, but not the virtual tables themselves) as cells.
 */
export function dumpDatabase(db: Db, schema = 'main', options: DumpOptions = {}): Record<string, Cell[][]> {
  const tables = db
    .prepare(
      `SELECT name FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name`,
    )
    .pluck()
    .all() as string[];
  const out: Record<string, Cell[][]> = {};
  for (const t of tables) {
    const cols = columnsOf(db, schema, t).filter((c) => !(options.omitClock === true && (c === 'created_ms' || c === 'updated_ms')));
    out[t] = tableCells(db, schema, t, cols);
  }
  return out;
}

/** Opens `file`, dumps it, closes it. */
export function dumpFile(file: string, options: DumpOptions = {}): Record<string, Cell[][]> {
  const db = openDatabase(file);
  try {
    return dumpDatabase(db, 'main', options);
  } finally {
    db.close();
  }
}

/** `sluice export` of `source`, appended to the JSONL `file` and to the segment folder `folder` (each resumes where it stopped). */
export function exportBothFormats(source: string, file: string, folder: string): void {
  for (const args of [
    ['--out', file],
    ['--out', folder, '--format', 'segment'],
  ]) {
    const r = cli(['export', source, ...args]);
    if (r.status !== 0) throw new Error(`sluice export ${args.join(' ')} failed: ${r.stderr}`);
  }
}

/** Rows of a table in another database file, as cells. */
export function fileTableCells(file: string, table: string, columns?: readonly string[]): Cell[][] {
  const db = openDatabase(file);
  try {
    return tableCells(db, 'main', table, columns);
  } finally {
    db.close();
  }
}

export interface ProjectionRow {
  readonly name: string;
  readonly state: string;
  readonly reason: string | null;
  readonly detail: string | null;
  readonly cursor: string | null;
  readonly seq: bigint;
  readonly applied_events: bigint;
  readonly last_error: string | null;
}

/** The target's metadata rows, by name. */
export function projectionRows(file: string): Map<string, ProjectionRow> {
  const db = openDatabase(file);
  try {
    const rows = db
      .prepare('SELECT name, state, reason, detail, cursor, seq, applied_events, last_error FROM main._sluice_projections ORDER BY name')
      .all() as ProjectionRow[];
    return new Map(rows.map((r) => [r.name, r]));
  } finally {
    db.close();
  }
}

/** Creates a source database with `schema`, runs `seed` (before capture, so the rows reach targets by snapshot) and enables capture. */
export function makeSource(
  makeDb: (name?: string, schema?: string) => { db: Db; file: string },
  schema: string,
  tables: readonly string[],
  options: { seed?: string; mode?: CaptureMode; name?: string } = {},
): { db: Db; file: string } {
  const s = makeDb(options.name ?? 'source.db', schema);
  if (options.seed !== undefined) s.db.exec(options.seed);
  enable(s.db, tables, options.mode === undefined ? {} : { mode: options.mode });
  return s;
}

/** The source's high-water seq. */
export function highWater(db: Db): number {
  return Number(db.prepare('SELECT coalesce(max(seq), 0) FROM main._sluice_journal').pluck().get() as bigint);
}

/** Journal seqs of one captured table in (after, hw]. */
export function journalSeqs(db: Db, table: string, after = 0): number[] {
  return (
    db
      .prepare(
        'SELECT j.seq FROM main._sluice_journal j JOIN main._sluice_tables t ON t.tid = j.tid WHERE t.name = ? AND j.seq > ? ORDER BY j.seq',
      )
      .pluck()
      .all(table, after) as bigint[]
  ).map(Number);
}

export interface CliResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI (compiled build) as a subprocess with extra environment variables. */
export function cli(args: readonly string[], env: Record<string, string> = {}): CliResult {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (env.SLUICE_CRASH_AT === undefined) delete childEnv.SLUICE_CRASH_AT;
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'sluice.js'), ...args], {
    encoding: 'utf8',
    cwd: ROOT,
    env: childEnv,
    timeout: 30_000,
  });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** Parses the one JSON object a `--json` command prints. */
export function jsonOut<T = Record<string, unknown>>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not JSON (status ${String(r.status)}): ${r.stdout}\n${r.stderr}`);
  }
}
