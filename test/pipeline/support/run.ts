import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { PYTHON, runPython } from '../../support/fixtures.ts';
import { startCli, waitFor, type Spawned } from '../../cli/support/cli.ts';
import { runStatusOutput } from '../../../src/cli/index.ts';
import { readConsumers } from '../../../src/capture/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import type { z } from 'zod';

/* `sluice run` as a user runs it: a process started on a pipeline file, read through its HTTP endpoints. */

export type Status = z.infer<typeof runStatusOutput>;

/** A port nothing listens on now (the OS picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0));
    });
  });
}

/** Starts `sluice run --config FILE --log json`. */
export function startRun(config: string, env: Readonly<Record<string, string>> = {}): Spawned {
  return startCli(['run', '--config', config, '--log', 'json'], env);
}

/** GET /healthz: its HTTP code and its RunStatus (checked against the documented schema). */
export async function healthz(port: number): Promise<{ code: number; status: Status }> {
  const r = await fetch(`http://127.0.0.1:${port}/healthz`);
  return { code: r.status, status: runStatusOutput.parse(await r.json()) };
}

/** Polls /healthz until `check` holds (connection refused counts as not yet); returns that reading. */
export async function waitHealth(
  port: number,
  what: string,
  check: (h: { code: number; status: Status }) => boolean,
  timeoutMs = 30_000,
): Promise<{ code: number; status: Status }> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const h = await healthz(port);
      if (check(h)) return h;
      last = h.status.problems;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last /healthz problems: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The JSON log lines of a run's stderr. */
export function logLines(run: Spawned): { level: string; part: string; event: string; msg: string; [k: string]: unknown }[] {
  return run
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; part: string; event: string; msg: string });
}

/** Runs Python's sqlite3 on `file` (an app writing its database): `script` sees `con`. */
export function py(file: string, script: string): void {
  runPython(
    `import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1])\ncon.execute("PRAGMA busy_timeout = 10000")\n${script}\ncon.commit()`,
    [file],
  );
}

/** A source made by Python in WAL mode: issues (id, title, state) and comments (id, issue_id, body), with `n` issues and 3n comments. */
export function appSource(file: string, n = 50): void {
  py(
    file,
    `con.execute("PRAGMA journal_mode = wal")
con.execute("CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT NOT NULL, state TEXT NOT NULL)")
con.execute("CREATE TABLE comments (id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, body TEXT NOT NULL)")
con.executemany("INSERT INTO issues VALUES (?, ?, ?)", [(i, f"issue {i}", "open" if i % 2 else "closed") for i in range(1, ${n} + 1)])
con.executemany("INSERT INTO comments VALUES (?, ?, ?)", [(i, i % ${n} + 1, f"comment {i} about pipes") for i in range(1, 3 * ${n} + 1)])`,
  );
}

/**
 * Another process (Python) opens a write transaction on `file` and keeps it
 * for `seconds`, or until commitNow, then commits: resolves once it holds
 * the lock; kill the returned child when done.
 */
export async function holdWriteLock(file: string, seconds: number): Promise<ChildProcess> {
  const app = spawn(PYTHON, [
    '-c',
    `import select, sqlite3, sys\ncon = sqlite3.connect(sys.argv[1], isolation_level=None)\ncon.execute("BEGIN IMMEDIATE")\nprint("locked", flush=True)\nselect.select([sys.stdin], [], [], ${seconds})\ncon.execute("COMMIT")`,
    file,
  ]);
  await new Promise<void>((resolve) => app.stdout.once('data', () => resolve()));
  return app;
}

/** Makes a holdWriteLock process commit now, before its `seconds` are up. */
export function commitNow(app: ChildProcess): void {
  app.stdin?.end('commit\n');
}

/** Writes a file (made with its folder). */
export function put(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** Stops `run` if a failed test left it running. */
export function kill(run: Spawned | undefined): void {
  if (run !== undefined && run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
}

export { waitFor };

/** waitFor, for what `run` is to do: on a timeout the error carries the run's last log lines, which say what it did instead. */
export async function waitForRun(run: Spawned, what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  try {
    await waitFor(what, check, timeoutMs);
  } catch (err) {
    const tail = run.stderr().split('\n').slice(-40).join('\n');
    throw new Error(`${(err as Error).message}; the run's last log lines:\n${tail}`, { cause: err });
  }
}

/**
 * The pipeline several run tests start from: `app.db` (appSource) captured
 * (issues, comments) into `cache.db` with `projections` (by default a
 * mirror of each, "*", and a map of the open issues), listening on a free
 * port; `run` started on it and built (/healthz 200). The caller kills
 * `run` (afterEach(kill)).
 */
export async function runAppPipeline(
  tmp: string,
  projections = `"*", {name: open_issues, source: issues, kind: map, columns: {id: id, title: title}, filter: "state = 'open'"}`,
): Promise<{ src: string; tgt: string; config: string; port: number; run: Spawned }> {
  const src = path.join(tmp, 'app.db');
  const tgt = path.join(tmp, 'cache.db');
  const config = path.join(tmp, 'sluice.yml');
  appSource(src);
  const port = await freePort();
  put(
    config,
    `sources:
  - path: app.db
    capture: [issues, comments]
    targets:
      - path: cache.db
        projections: [${projections}]
listen: 127.0.0.1:${port}
`,
  );
  const run = startRun(config);
  try {
    await waitHealth(port, 'the first build', (h) => h.code === 200);
  } catch (err) {
    kill(run);
    throw err;
  }
  return { src, tgt, config, port, run };
}

/** The acknowledgements on source `src`, as `projection@target file name`, sorted. */
export function acks(src: string): string[] {
  const db = openDatabase(src, { readonly: true });
  try {
    return readConsumers(db)
      .map((c) => `${c.projection}@${path.basename(c.target ?? '')}`)
      .sort();
  } finally {
    db.close();
  }
}
