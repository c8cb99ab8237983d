import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

/*
 * The long-running processes of a multi-process bench (fan-out, soak): each
 * a real `node bin/sluice.js ...` (the compiled CLI: the report builds dist/
 * first) with its stderr appended to a log file, its peak RSS (VmHWM) read
 * from /proc while it runs, and SIGKILL + start again counted. A process that
 * exits by itself (not killed by us) is counted too: a follower should not.
 */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.join(ROOT, 'bin', 'sluice.js');

/**
 * More node arguments for every process of the fleet, from SLUICE_BENCH_NODE_ARGS (space separated): to profile
 * them, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` (node refuses --cpu-prof in NODE_OPTIONS).
 */
const NODE_ARGS = (process.env.SLUICE_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

export class Proc {
  readonly name: string;
  readonly args: readonly string[];
  readonly log: string;
  child: ChildProcess | undefined;
  restarts = 0;
  /** Exits we did not cause, with their status. */
  readonly unexpectedExits: string[] = [];
  peakRssKb = 0;
  #expectingExit = false;

  constructor(name: string, args: readonly string[], log: string) {
    this.name = name;
    this.args = args;
    this.log = log;
  }

  start(): this {
    const out = fs.openSync(this.log, 'a');
    const child = spawn(process.execPath, [...NODE_ARGS, BIN, ...this.args], { cwd: ROOT, stdio: ['ignore', out, out] });
    fs.closeSync(out);
    this.#expectingExit = false;
    this.child = child;
    child.on('exit', (code, signal) => {
      if (!this.#expectingExit) this.unexpectedExits.push(`exit ${code ?? signal} at ${new Date().toISOString()}`);
      if (this.child === child) this.child = undefined;
    });
    return this;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Reads the process's peak RSS so far (call often: it is lost when the process ends). */
  sample(): void {
    const pid = this.pid;
    if (pid === undefined) return;
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m !== null) this.peakRssKb = Math.max(this.peakRssKb, Number(m[1]));
    } catch {
      /* it just ended */
    }
  }

  /** Sends `signal` and waits for the exit (SIGKILL after 10 s). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const child = this.child;
    if (child === undefined) return null;
    this.sample();
    this.#expectingExit = true;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }

  /** SIGKILL, as a crash, then start again. */
  async crash(): Promise<void> {
    await this.stop('SIGKILL');
    this.restarts++;
    this.start();
  }

  /** Starts it again if it ended by itself (after counting that). */
  reviveIfDead(): boolean {
    if (this.child !== undefined) return false;
    this.start();
    return true;
  }
}

/** CPU time (user + system, ms) a process has used so far, from /proc (NaN once it has ended). */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces) in its parentheses: utime and stime are the 12th and 13th.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** The newest seq in the source's journal (0 when none). */
export function sourceSeq(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    return Number((db.prepare('SELECT max(seq) AS s FROM main._sluice_journal').get() as { s: number | null }).s ?? 0);
  } finally {
    db.close();
  }
}

/** The lowest seq of the target's projections (-1 when it has none or cannot be read yet). */
export function targetSeq(file: string): number {
  if (!fs.existsSync(file)) return -1;
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      const r = db.prepare('SELECT min(seq) AS s, count(*) AS n FROM main._sluice_projections').get() as { s: number | null; n: number };
      return r.n === 0 ? -1 : Number(r.s);
    } finally {
      db.close();
    }
  } catch {
    return -1;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Waits until `check` holds; false on timeout. */
export async function until(check: () => boolean, timeoutMs: number, everyMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
  return true;
}
