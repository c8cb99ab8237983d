import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import type { z } from 'zod';
import { expect } from 'vitest';
import { ROOT, runCli, runPython, runSqliteCli } from '../../support/fixtures.ts';
import { openDatabase, quoteIdent, type Db } from '../../../src/sqlite/index.ts';
import { enable, openSource } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { loadDefinitions } from '../../../src/projection/index.ts';
import { exportOnce, LineSink } from '../../../src/export/index.ts';
import { buildTracker } from '../../../fixtures/tracker.ts';

/*
 * Helpers for the CLI suite: every command under test runs as a subprocess
 * (node bin/sluice.js, the compiled build). Setup that is not under test
 * (building a fixture, enabling capture) goes through the library, which is
 * much cheaper than a spawn.
 */

export const BIN = path.join(ROOT, 'bin', 'sluice.js');

export interface CliResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export { runCli };

/** Runs the CLI asynchronously, so independent invocations can run side by side. */
export function runCliAsync(
  args: readonly string[],
  options: { cwd?: string; input?: string; env?: Readonly<Record<string, string>> } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
    // A child that exits before it reads its stdin (most never read it) makes the write fail with EPIPE: that is no error of the run.
    child.stdin.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') reject(err);
    });
    child.stdin.end(options.input ?? '');
  });
}

/** runCliAsync, expected to exit 0 (the failure names the command and prints what it said). */
export async function runCliOk(args: readonly string[]): Promise<CliResult> {
  const r = await runCliAsync(args);
  expect(r.status, `sluice ${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(0);
  return r;
}

/**
 * A source `src` with table t(id, v) holding one row, captured and synced to
 * `tgt`, each through the CLI: the pair of files a test then gives in the
 * wrong places (a target where a source goes, the two swapped).
 */
export async function capturedAndSynced(src: string, tgt: string): Promise<void> {
  runSqliteCli(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');");
  await runCliOk(['enable', src, 't']);
  await runCliOk(['sync', src, tgt]);
}

/** Maps with at most `limit` calls in flight (each CLI spawn is mostly start-up time). */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The one JSON object a --json command prints, checked against its documented schema. */
export function parseJson<S extends z.ZodType>(r: { stdout: string; stderr: string }, schema: S): z.infer<S> {
  const lines = r.stdout.trimEnd().split('\n');
  expect(lines, `stdout should be exactly one JSON line; stderr: ${r.stderr}`).toHaveLength(1);
  return schema.parse(JSON.parse(lines[0] as string));
}

/** An error report: exactly one stderr line `sluice: CODE: message`, and no stack trace. */
export function expectOneLineError(r: { stdout: string; stderr: string }, code: string | RegExp): void {
  expect(r.stderr).not.toContain('    at ');
  expect(r.stderr, 'exactly one line on stderr').toMatch(/^[^\n]+\n$/);
  const m = /^sluice: ([A-Z][A-Z0-9_]*): (.+)\n$/.exec(r.stderr);
  expect(m, `stderr is not "sluice: CODE: message": ${r.stderr}`).not.toBeNull();
  if (typeof code === 'string') expect(m?.[1]).toBe(code);
  else expect(m?.[1]).toMatch(code);
}

/** A fresh temp directory for a whole test file (removed in afterAll via `removeDir`). */
export function makeDir(prefix = 'sluice-cli-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function removeDir(dir: string | undefined): void {
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
}

/** The demo's issue-tracker fixture at `file`, with capture enabled on `tables` (none: no capture). */
export function trackerSource(
  file: string,
  tables: readonly string[] = ['repositories', 'issues', 'comments', 'labels'],
  scale?: Parameters<typeof buildTracker>[1],
): string {
  buildTracker(file, scale);
  if (tables.length > 0) {
    const db = openDatabase(file);
    try {
      enable(db, tables);
    } finally {
      db.close();
    }
  }
  return file;
}

/**
 * `sluice sync SRC TGT [--projection FILE...]` through the library the CLI
 * runs, for a test's setup (a CLI run is half a second of start-up; where
 * the CLI's sync is the subject, a test runs the CLI): the exit code the CLI
 * gives its report, 1 when a projection failed, 3 when one is not active or
 * the source acknowledges one the target lost, else 0.
 */
export async function syncByLibrary(src: string, tgt: string, files: readonly string[] = []): Promise<number> {
  const projections = (await Promise.all(files.map((f) => loadDefinitions(f)))).flat();
  const r = await sync(src, tgt, files.length === 0 ? {} : { projections });
  if (r.projections.some((p) => p.error !== undefined)) return 1;
  return r.projections.some((p) => p.state !== 'active') || (r.lost ?? []).length > 0 ? 3 : 0;
}

/**
 * What a first `sluice export SRC --out OUT` writes to OUT (a snapshot, then
 * the retained events in batches of 1000), through the library, for a test
 * whose subject is what is done with the file. Not its OUT.cursor: a test
 * that exports again into OUT runs the CLI for both.
 */
export function exportByLibrary(src: string, out: string): void {
  const db = openSource(src, { readonly: true });
  const fd = fs.openSync(out, 'a');
  try {
    exportOnce(db, new LineSink(fd), { batchSize: 1000 }, () => {});
  } finally {
    fs.closeSync(fd);
    db.close();
  }
}

/**
 * The files several CLI tests run commands on, in `dir`: a tracker source
 * `app.db`, synced into `cache.db`, and exported to `app.jsonl`, both
 * through the library.
 */
export async function syncedAndExported(dir: string): Promise<{ src: string; tgt: string; jsonl: string }> {
  const src = trackerSource(path.join(dir, 'app.db'));
  const tgt = path.join(dir, 'cache.db');
  expect(await syncByLibrary(src, tgt), `sync ${src} ${tgt}`).toBe(0);
  const jsonl = path.join(dir, 'app.jsonl');
  exportByLibrary(src, jsonl);
  return { src, tgt, jsonl };
}

/** Runs `fn` on a connection of this process to `file` (library calls a test's setup makes), closed after. */
export function onDatabase<T>(file: string, fn: (db: ReturnType<typeof openDatabase>) => T): T {
  const db = openDatabase(file);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Runs SQL on a database from this process (a writer that is not the CLI), in one transaction. */
export function write(file: string, sql: string): void {
  const db = openDatabase(file);
  try {
    db.transaction(() => db.exec(sql))();
  } finally {
    db.close();
  }
}

/** Reads one value with a short-lived read-only connection. */
export function scalar(file: string, sql: string, ...params: unknown[]): unknown {
  const db = openDatabase(file, { readonly: true });
  try {
    return db
      .prepare(sql)
      .pluck()
      .get(...params);
  } finally {
    db.close();
  }
}

/** The source's high-water seq. */
export function sourceSeq(file: string): number {
  return Number(scalar(file, 'SELECT max(seq) FROM main._sluice_journal') ?? 0n);
}

/** The seq of projection `name` in target `file`, or -1 while the target (or its row) does not exist yet. */
export function projectionSeq(file: string, name: string): number {
  try {
    return Number(scalar(file, 'SELECT seq FROM main._sluice_projections WHERE name = ?', name));
  } catch {
    return -1;
  }
}

/**
 * Every user table (not sqlite_* or _sluice_*, not virtual) as sorted rows of
 * cells that are exact by storage class and bytes: quote() for INTEGER, REAL
 * (it round-trips), BLOB (X'..') and NULL; TEXT as T<hex of its bytes>, so
 * malformed UTF-8 compares exactly too.
 */
/**
 * The rows of `table` in `db`, each as its columns (`columns`, or all of
 * them) rendered by `render` (given the quoted name) and joined by '|',
 * sorted: what dumpTables and exactRows compare.
 */
export function sortedRows(db: Db, table: string, render: (quoted: string) => string, columns?: readonly string[]): string[] {
  const names = columns ?? (db.prepare('SELECT name FROM main.pragma_table_info(?) ORDER BY cid').pluck().all(table) as string[]);
  const exprs = names.map((c) => render(quoteIdent(c)));
  return (
    db
      .prepare(`SELECT ${exprs.join(" || '|' || ")} FROM main.${quoteIdent(table)}`)
      .pluck()
      .all() as string[]
  ).sort();
}

export function dumpTables(file: string, only?: readonly string[]): Record<string, string[]> {
  const db = openDatabase(file, { readonly: true });
  try {
    const tables = (
      db
        .prepare(
          "SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_sluice\\_%' ESCAPE '\\' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
        )
        .pluck()
        .all() as string[]
    ).filter((t) => only === undefined || only.includes(t));
    // fromEntries: a table named __proto__ is a key like any other (out[t] = ... would set the object's prototype).
    return Object.fromEntries(
      tables.map((t) => [t, sortedRows(db, t, (c) => `CASE typeof(${c}) WHEN 'text' THEN 'T' || hex(${c}) ELSE quote(${c}) END`)]),
    );
  } finally {
    db.close();
  }
}

export function sha256(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Polls `check` until it is true (or throws after `timeoutMs`). */
export async function waitFor(what: string, check: () => boolean, timeoutMs = 30_000, everyMs = 25): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let ok = false;
    try {
      ok = check();
    } catch {
      ok = false; // e.g. the target is mid-creation
    }
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface Spawned {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ status: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a long-running CLI process (sync --follow, export --follow), with `env` added to this process's environment. */
export function startCli(args: readonly string[], env: Readonly<Record<string, string>> = {}): Spawned {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<{ status: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (status, signal) => resolve({ status, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/**
 * A tracker whose comments table is captured and synced once into cache.db,
 * then given `backlogRounds` rounds of 200 updates by Python, not yet synced:
 * a catch-up long enough to watch (or interrupt) on a terminal.
 */
export async function syncedTrackerWithBacklog(dir: string, backlogRounds: number): Promise<{ src: string; tgt: string }> {
  const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
  const tgt = path.join(dir, 'cache.db');
  // The first sync is the setup (through the library the CLI runs); the sync under test runs the CLI.
  expect(await syncByLibrary(src, tgt), `sync ${src} ${tgt}`).toBe(0);
  if (backlogRounds > 0) {
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for r in range(int(sys.argv[2])):
    con.execute("UPDATE comments SET body = body || ' more' WHERE id <= 200")
con.commit()`,
      [src, String(backlogRounds)],
    );
  }
  return { src, tgt };
}

/**
 * startCli, with bin/sluice.js's import of the CLI's build (dist/cli/main.js,
 * awaited before any command runs: about 0.4 s) held `holdMs` by a module
 * hook, which writes `marker` as that import starts: a signal sent after
 * `marker` exists lands while the CLI loads, before any command installs its
 * handlers. The hook and its registration are written into `dir`.
 */
export function startCliHeldAtImport(
  args: readonly string[],
  dir: string,
  holdMs: number,
  env: Readonly<Record<string, string>> = {},
): Spawned & { readonly marker: string } {
  const marker = path.join(dir, 'cli-importing');
  const hooks = path.join(dir, 'hold-import-hooks.mjs');
  fs.writeFileSync(
    hooks,
    `import fs from 'node:fs';
export async function load(url, context, nextLoad) {
  if (/\\/(dist\\/cli\\/main\\.js|dist\\/src\\/cli\\/main\\.js|src\\/cli\\/main\\.ts)$/.test(url)) {
    fs.writeFileSync(${JSON.stringify(marker)}, '');
    await new Promise((resolve) => setTimeout(resolve, ${holdMs}));
  }
  return nextLoad(url, context);
}
`,
  );
  const register = path.join(dir, 'hold-import.mjs');
  fs.writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  const child = spawn(process.execPath, ['--import', pathToFileURL(register).href, BIN, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<{ status: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (status, signal) => resolve({ status, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exited, marker };
}
