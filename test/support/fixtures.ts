import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { test as base } from 'vitest';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';

export interface Fixtures {
  /** A fresh temp directory, removed after the test. */
  tmp: string;
  /** Opens (creating) a database in `tmp`, in WAL mode like a live app's; closed after the test. */
  makeDb: (name?: string, schema?: string) => { db: Db; file: string };
}

export const test = base.extend<Fixtures>({
  // eslint-disable-next-line no-empty-pattern
  tmp: async ({}, use) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-test-'));
    await use(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  },
  makeDb: async ({ tmp }, use) => {
    const opened: Db[] = [];
    let n = 0;
    await use((name, schema) => {
      const file = path.join(tmp, name ?? `db${n++}.db`);
      const db = openDatabase(file, { create: true, wal: true });
      if (schema !== undefined) db.exec(schema);
      opened.push(db);
      return { db, file };
    });
    for (const db of opened) if (db.open) db.close();
  },
});

export { expect, describe } from 'vitest';

/** What `fn` throws (or the promise it returns rejects with); an Error when it does neither. */
export async function failure(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

/**
 * The Python interpreter used as an external writer (runPython, and tests
 * that spawn it asynchronously): python3 from the PATH, resolved once to the
 * interpreter it runs (sys.executable). A version manager's python3 on the
 * PATH is a shim (pyenv's is a bash script that runs `pyenv exec`), about
 * 0.4 s of start-up before each script; the interpreter behind it is the same.
 */
export const PYTHON = pythonInterpreter();

function pythonInterpreter(): string {
  const r = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' });
  const exe = r.status === 0 ? r.stdout.trim() : '';
  return exe !== '' && fs.existsSync(exe) ? exe : 'python3';
}

/** Runs a Python script with the stdlib sqlite3 module (an external writer that knows nothing of sluice). */
export function runPython(script: string, args: readonly string[] = []): string {
  const r = spawnSync(PYTHON, ['-c', script, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/**
 * Leaves a hot rollback journal beside `file` (a database in rollback-journal
 * mode): a Python writer killed (exit 9) in the middle of a transaction that
 * had spilled to the file. Throws when the writer did not end so.
 */
export function leaveHotJournal(file: string): void {
  const killed = spawnSync(
    PYTHON,
    [
      '-c',
      `import sqlite3, os, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute('PRAGMA cache_size = 1')
c.execute('BEGIN')
c.execute('CREATE TABLE junk (x)')
c.executemany('INSERT INTO junk VALUES (?)', [('x' * 500,)] * 2000)
os._exit(9)`,
      file,
    ],
    { encoding: 'utf8' },
  );
  if (killed.status !== 9) throw new Error(`the writer killed mid-transaction ended with ${killed.status}: ${killed.stderr}`);
}

/** Every file in `dir`, by content (a command that writes nothing leaves it as it was). */
export function filesIn(dir: string): Record<string, string> {
  return Object.fromEntries(
    fs
      .readdirSync(dir)
      .sort()
      .map((f) => [
        f,
        createHash('sha256')
          .update(fs.readFileSync(path.join(dir, f)))
          .digest('hex'),
      ]),
  );
}

/** A program writing `file` (in WAL mode) killed after a commit it never checkpointed: its -wal and -shm stay beside it. */
export function leaveWal(file: string): void {
  runPython(
    `import sqlite3, os, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute('PRAGMA wal_autocheckpoint = 0')
c.execute('CREATE TABLE notes (x)')
c.execute("INSERT INTO notes VALUES ('kept')")
sys.stdout.flush()
os._exit(0)`,
    [file],
  );
}

/** Runs SQL through the sqlite3 command-line shell. */
/**
 * Runs SQL through the sqlite3 CLI, as another program would. It waits up to
 * 10 s for a lock (`-cmd .timeout`), as a program writing beside a live
 * sluice should: sluice itself writes to the source (acknowledgements,
 * pruning), and the CLI's default is to fail at once with "database is locked".
 */
export function runSqliteCli(file: string, sql: string): string {
  const r = spawnSync('sqlite3', ['-cmd', '.timeout 10000', file], { input: sql, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sqlite3 CLI failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname.replace(/^\/([A-Za-z]:)/, '$1')), '..', '..');

/** Runs the CLI as a subprocess (node bin/sluice.js ...). */
export function runCli(
  args: readonly string[],
  options: { input?: string; cwd?: string } = {},
): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'sluice.js'), ...args], {
    encoding: 'utf8',
    input: options.input,
    cwd: options.cwd ?? ROOT,
  });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}
