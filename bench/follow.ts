/*
 * `sync --follow` latency as a user sees it, and its idle CPU, against the
 * DESIGN.md target: source commit -> target commit p50 <= 0.5 ms and
 * p99 <= 5 ms at 1k writes/s, p99 <= 20 ms at 10k writes/s; idle CPU < 2% of
 * a core. Judged with one table and with five.
 *
 *   npx tsx bench/follow.ts [--seconds N (5)] [--idle N (10)] [--rates 1000,10000] [--tables 1,5]
 *                           [--rounds N (1)] [--compare CHECKOUT] [--keep] [--cpu-prof DIR]
 *
 * Three processes, none of them this one:
 * - the follower: the real CLI, `node bin/sluice.js sync source.db cache.db
 *   --follow`, in its default (human) output mode, stdout and stderr to
 *   files (the compiled CLI in dist/: run `npm run build` first; the bench
 *   warns when src/ is newer than dist/). No --projection: the target's set
 *   is "*", a mirror of every captured table. Its first pass snapshots the
 *   empty tables; writing starts after that.
 * - the writer: python3's sqlite3 (bench/lib/follow-writer.py), which knows
 *   nothing of sluice: one connection, autocommit, synchronous=NORMAL,
 *   single-row INSERTs on a fixed schedule, each rate of --rates for
 *   --seconds with 1 s between them, write i into table i mod N. It logs, per
 *   write, the monotonic time right after its INSERT (and so its COMMIT)
 *   returned: the source commit.
 * - the reader: python3 again (bench/lib/follow-reader.py), on cache.db: it
 *   wakes on an inotify watch of the target's -wal (with a 2 ms fallback
 *   look), looks with PRAGMA data_version, and notes when it first saw each
 *   row; the note is taken after its read transaction began, so never before
 *   the row's commit. The reader's own delay is in the figure, not
 *   subtracted: the bench measures it alone first (the calibration line: the
 *   same reader on rows a writer commits straight into a database, no
 *   follower), so the part that is the follower's is plain.
 *
 * Latency = the reader's first sight of a row - the writer's commit of it,
 * both CLOCK_MONOTONIC (shared by every process of the machine). "from stmt
 * start" uses the time before the writer's INSERT instead, so it also counts
 * the source statement itself. The target is checked afterwards: every row
 * is there with the same n.
 *
 * CPU: the follower's utime+stime from /proc over each write phase (per
 * write, and as % of a core), with its run-queue wait (ms per second its
 * main thread was runnable but had no CPU: the part of the latency the load
 * of this shared machine adds), the reader's CPU and the 1-minute load. Idle
 * CPU: the follower's over --idle seconds once the last row is applied.
 *
 * --compare CHECKOUT runs another checkout's CLI (its bin/sluice.js, built)
 * the same way, alternating with this one round by round (--rounds), for a
 * before/after from one session: each figure is then the median of the
 * rounds. --cpu-prof DIR runs the followers with node --cpu-prof.
 *
 * Results: a table on stdout and bench/out/follow.json; the figures of this
 * checkout for bench/report.ts. Bench only: a MISS does not change the exit
 * code. --keep keeps the scratch directories.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { enable } from '../src/capture/enable.ts';
import { openDatabase } from '../src/sqlite/connection.ts';
import { fmtMs, intFlag, makeScratch, renderTable } from './lib/workload.ts';
import { emitFigures, type Figure } from './lib/figures.ts';

const argv = process.argv.slice(2);
const USAGE =
  'usage: npx tsx bench/follow.ts [--seconds N (5, per write rate)] [--idle N (10)] [--rates 1000,10000] [--tables 1,5] [--rounds N (1)] [--compare CHECKOUT (another tree, alternated with this one)] [--keep] [--cpu-prof DIR]\n';
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const VALUED = new Set(['--seconds', '--idle', '--cpu-prof', '--rates', '--tables', '--rounds', '--compare']);
for (let i = 0; i < argv.length; i++) {
  const a = String(argv[i]);
  if (a === '--keep') continue;
  if (VALUED.has(a)) {
    i++;
    continue;
  }
  process.stderr.write(`unknown argument ${a}; see --help\n`);
  process.exit(2);
}
const SECONDS = intFlag(argv, 'seconds', 5);
const IDLE_SECONDS = intFlag(argv, 'idle', 10);
const ROUNDS = intFlag(argv, 'rounds', 1);
const KEEP = argv.includes('--keep');
const valueOf = (flag: string) => (argv.includes(flag) ? String(argv[argv.indexOf(flag) + 1]) : undefined);
const CPU_PROF = valueOf('--cpu-prof') === undefined ? undefined : path.resolve(String(valueOf('--cpu-prof')));
const list = (flag: string, fallback: readonly number[]): readonly number[] => {
  const v = valueOf(flag);
  const xs = v === undefined ? fallback : v.split(',').map(Number);
  if (xs.some((r) => !Number.isSafeInteger(r) || r < 1)) {
    process.stderr.write(`${flag} takes whole numbers >= 1 separated by commas\n`);
    process.exit(2);
  }
  return xs;
};
const RATES = list('--rates', [1000, 10_000]);
const TABLES = list('--tables', [1, 5]);
/** DESIGN.md: p50 <= 0.5 ms and p99 <= 5 ms at 1k writes/s, p99 <= 20 ms at 10k writes/s, idle CPU < 2% of a core. */
const TARGET = { p50: 0.5, p99: 5, p99At10k: 20, idleCpuPct: 2 };
/** The calibration: the reader on direct writes, at this rate for this long. */
const CALIBRATION = { rate: 1000, seconds: 2 };

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
interface Checkout {
  readonly name: string;
  readonly root: string;
}
const CHECKOUTS: readonly Checkout[] = [
  { name: 'this', root },
  ...(valueOf('--compare') === undefined ? [] : [{ name: 'compare', root: path.resolve(String(valueOf('--compare'))) }]),
];

// ---------------------------------------------------------------- helpers

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** The newest mtime of any file under `dir` (0 when it is missing). */
function newestFile(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestFile(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** Why a checkout's CLI would not be its compiled sources, if it would not. */
function checkBuild(c: Checkout): string | undefined {
  if (!fs.existsSync(path.join(c.root, 'dist', 'cli', 'main.js')) && !fs.existsSync(path.join(c.root, 'dist', 'src', 'cli', 'main.js')))
    return `${c.root}: dist/ is missing: bin/sluice.js runs the sources through tsx. Run \`npm run build\` for figures of the compiled CLI.`;
  // (The build rewrites only the files whose content changed: the newest of them is the build's time.)
  if (newestMtime(path.join(c.root, 'src')) > newestFile(path.join(c.root, 'dist')))
    return `${c.root}: src/ has changes newer than dist/: the follower runs the older build. Run \`npm run build\` first.`;
  return undefined;
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Milliseconds a process's main thread was runnable but waiting for a CPU (/proc/<pid>/schedstat), or NaN. */
function runQueueMs(pid: number): number {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return Number.NaN;
  }
}

/** utime + stime of a process (every thread), in ms; NaN once it is gone. */
function cpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] as number;
}

interface Stats {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

function stats(values: readonly number[]): Stats {
  const s = [...values].sort((a, b) => a - b);
  return { n: s.length, p50: quantile(s, 0.5), p90: quantile(s, 0.9), p99: quantile(s, 0.99), max: s[s.length - 1] ?? Number.NaN };
}

function median(xs: readonly number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function python(): string {
  for (const exe of ['python3', 'python']) {
    try {
      execFileSync(exe, ['-c', 'import sqlite3'], { stdio: 'ignore' });
      return exe;
    } catch {
      /* try the next */
    }
  }
  process.stderr.write('bench/follow needs python3 with the sqlite3 module for the writer and the reader.\n');
  process.exit(1);
}

const PY = python();
const WRITER = path.join(root, 'bench', 'lib', 'follow-writer.py');
const READER = path.join(root, 'bench', 'lib', 'follow-reader.py');

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

function tableNames(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `t${i + 1}`);
}

/** A database with `tables` tables t1.. (id, v, n), in WAL mode; captured when `capture`. */
function makeSource(file: string, tables: readonly string[], capture: boolean): void {
  const db = openDatabase(file, { create: true, role: 'source', wal: true });
  for (const t of tables) db.exec(`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)`);
  if (capture) enable(db, [...tables]);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

interface WriterLog {
  readonly ids: number[];
  readonly t0: number[];
  readonly t1: number[];
  readonly late: number[];
}

interface ReaderOut {
  readonly seen: (number | null)[];
  readonly wakes: number;
  readonly looks: number;
  readonly found: { watch: number; recheck: number; fallback: number };
}

/** The reader on `db`, started and ready (its watch and connection open). */
async function startReader(dir: string, db: string, tables: readonly string[], expect: number, tag: string) {
  const out = path.join(dir, `reader-${tag}.json`);
  const child = spawn(PY, [READER, db, tables.join(','), String(expect), out, String(SECONDS * RATES.length * 4 + 120)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the reader exited (${code}) before it was ready`)));
    readline.createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', () => resolve());
  });
  return {
    child,
    pid: child.pid as number,
    async result(): Promise<ReaderOut> {
      const code = await exited(child);
      if (code !== 0) throw new Error(`the reader failed (${code})`);
      return JSON.parse(fs.readFileSync(out, 'utf8')) as ReaderOut;
    },
  };
}

interface PhaseMark {
  cpu0: number;
  rcpu0: number;
  rq0: number;
  t0: number;
  load0: number;
  cpu?: number;
  rcpu?: number;
  rq?: number;
  wall?: number;
  load?: number;
}

/** Runs the writer through `phases` on `db`; per-phase CPU of `pids` (the follower, the reader) from its phase marks. */
async function write(
  dir: string,
  db: string,
  tables: readonly string[],
  phases: readonly { rate: number; seconds: number; tag: string }[],
  follower: number | undefined,
  reader: number,
): Promise<{ log: WriterLog; marks: Map<string, PhaseMark> }> {
  const out = path.join(dir, `writer-${path.basename(db)}.json`);
  const spec = { tables, phases, gapSeconds: 1 };
  const writer = spawn(PY, [WRITER, db, JSON.stringify(spec), out], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  writer.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const marks = new Map<string, PhaseMark>();
  const fcpu = () => (follower === undefined ? Number.NaN : cpuMs(follower));
  readline.createInterface({ input: writer.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const m = JSON.parse(line) as { event: string; tag: string };
    if (m.event === 'start')
      marks.set(m.tag, {
        cpu0: fcpu(),
        rcpu0: cpuMs(reader),
        rq0: follower === undefined ? Number.NaN : runQueueMs(follower),
        t0: performance.now(),
        load0: os.loadavg()[0] as number,
      });
    else {
      const p = marks.get(m.tag);
      if (p === undefined) return;
      p.cpu = fcpu() - p.cpu0;
      p.rcpu = cpuMs(reader) - p.rcpu0;
      p.rq = follower === undefined ? Number.NaN : runQueueMs(follower) - p.rq0;
      p.load = os.loadavg()[0] as number;
      p.wall = performance.now() - p.t0;
    }
  });
  const code = await exited(writer);
  if (code !== 0) throw new Error(`the writer failed (${code}): ${err}`);
  return { log: JSON.parse(fs.readFileSync(out, 'utf8')) as WriterLog, marks };
}

interface PhaseResult {
  readonly rate: number;
  readonly writes: number;
  readonly achievedPerSec: number;
  readonly latencyMs: Stats;
  readonly fromStatementStartMs: Stats;
  readonly sourceCommitMs: Stats;
  /** The follower's CPU over the phase: % of a core, and ms per write. */
  readonly followerCpuPct: number;
  readonly followerCpuMsPerWrite: number;
  /** The follower's main thread's run-queue wait per second of the phase, in ms. */
  readonly followerRunQueueMsPerSec: number;
  readonly readerCpuPct: number;
  /** 1-minute load average at the start and end of the phase. */
  readonly loadAvg: readonly [number, number];
}

/** Per phase of the writer: latency from its commits to the reader's sights. */
function phaseResults(
  phases: readonly { rate: number; seconds: number; tag: string }[],
  log: WriterLog,
  seen: readonly (number | null)[],
  marks: ReadonlyMap<string, PhaseMark>,
  problems: string[],
): PhaseResult[] {
  const out: PhaseResult[] = [];
  let offset = 0;
  for (const ph of phases) {
    const count = ph.rate * ph.seconds;
    const lat: number[] = [];
    const fromStart: number[] = [];
    const commit: number[] = [];
    for (let i = offset; i < offset + count; i++) {
      const id = log.ids[i] as number;
      const t0 = (log.t0[i] as number) * 1000;
      const t1 = (log.t1[i] as number) * 1000;
      const s = seen[id - 1];
      if (s == null) {
        if (problems.length < 10) problems.push(`the reader never saw row ${id}`);
        continue;
      }
      lat.push(s * 1000 - t1);
      fromStart.push(s * 1000 - t0);
      commit.push(t1 - t0);
    }
    const first = (log.t0[offset] as number) * 1000;
    const last = (log.t0[offset + count - 1] as number) * 1000;
    const m = marks.get(ph.tag);
    const wall = m?.wall ?? Number.NaN;
    out.push({
      rate: ph.rate,
      writes: count,
      achievedPerSec: count > 1 ? ((count - 1) * 1000) / (last - first) : Number.NaN,
      latencyMs: stats(lat),
      fromStatementStartMs: stats(fromStart),
      sourceCommitMs: stats(commit),
      followerCpuPct: (100 * (m?.cpu ?? Number.NaN)) / wall,
      followerCpuMsPerWrite: (m?.cpu ?? Number.NaN) / count,
      followerRunQueueMsPerSec: (1000 * (m?.rq ?? Number.NaN)) / wall,
      readerCpuPct: (100 * (m?.rcpu ?? Number.NaN)) / wall,
      loadAvg: [m?.load0 ?? Number.NaN, m?.load ?? Number.NaN],
    });
    offset += count;
  }
  return out;
}

// ---------------------------------------------------------------- one session

interface Session {
  readonly checkout: string;
  readonly tables: number;
  readonly round: number;
  readonly phases: PhaseResult[];
  readonly idle: { readonly cpuMs: number; readonly wallMs: number; readonly pct: number } | undefined;
  readonly reader: Omit<ReaderOut, 'seen'>;
  readonly followerExitCode: number | null;
  readonly problems: string[];
}

/** The reader alone on rows a writer commits straight into a database: the reader's own delay. */
async function calibrate(): Promise<{ latencyMs: Stats; readerCpuPct: number; load: number }> {
  const scratch = makeScratch('sluice-bench-follow-cal-');
  try {
    const db = path.join(scratch.dir, 'direct.db');
    makeSource(db, ['t1'], false);
    const n = CALIBRATION.rate * CALIBRATION.seconds;
    const reader = await startReader(scratch.dir, db, ['t1'], n, 'cal');
    const phases = [{ rate: CALIBRATION.rate, seconds: CALIBRATION.seconds, tag: 'cal' }];
    const { log, marks } = await write(scratch.dir, db, ['t1'], phases, undefined, reader.pid);
    const r = await reader.result();
    const problems: string[] = [];
    const [p] = phaseResults(phases, log, r.seen, marks, problems);
    if (problems.length > 0) throw new Error(`calibration: ${problems.join('; ')}`);
    return { latencyMs: (p as PhaseResult).latencyMs, readerCpuPct: (p as PhaseResult).readerCpuPct, load: os.loadavg()[0] as number };
  } finally {
    scratch.cleanup();
  }
}

async function session(c: Checkout, tableCount: number, round: number): Promise<Session> {
  const scratch = makeScratch('sluice-bench-follow-');
  const dir = scratch.dir;
  const tables = tableNames(tableCount);
  const source = path.join(dir, 'source.db');
  const target = path.join(dir, 'cache.db');
  makeSource(source, tables, true);
  const problems: string[] = [];
  const outFd = fs.openSync(path.join(dir, 'follower.out'), 'w');
  const errFd = fs.openSync(path.join(dir, 'follower.err'), 'w');
  const nodeArgs = CPU_PROF === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', CPU_PROF];
  const follower = spawn(process.execPath, [...nodeArgs, path.join(c.root, 'bin', 'sluice.js'), 'sync', source, target, '--follow'], {
    stdio: ['ignore', outFd, errFd],
    cwd: dir,
  });
  fs.closeSync(outFd);
  fs.closeSync(errFd);
  const pid = follower.pid as number;
  const phases = RATES.map((rate) => ({ rate, seconds: SECONDS, tag: `r${rate}` }));
  const expect = phases.reduce((a, p) => a + p.rate * p.seconds, 0);
  let idle: Session['idle'];
  let exitCode: number | null = null;
  let results: PhaseResult[] = [];
  let reader: ReaderOut | undefined;
  try {
    // The first pass builds every mirror (empty): then the target has the tables.
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (follower.exitCode !== null)
        throw new Error(`the follower exited (${follower.exitCode}): ${fs.readFileSync(path.join(dir, 'follower.err'), 'utf8')}`);
      if (Date.now() > deadline) throw new Error('the follower did not build the target within 30 s');
      if (fs.existsSync(target)) {
        const db = openDatabase(target, { readonly: true, role: 'target' });
        try {
          const have = db
            .prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN (SELECT value FROM json_each(?))")
            .pluck()
            .get(JSON.stringify(tables));
          if (Number(have) === tables.length) break;
        } finally {
          db.close();
        }
      }
      await sleep(50);
    }
    await sleep(500);
    const r = await startReader(dir, target, tables, expect, 'follow');
    const { log, marks } = await write(dir, source, tables, phases, pid, r.pid);
    reader = await r.result();
    results = phaseResults(phases, log, reader.seen, marks, problems);

    // Idle CPU, once the last row is applied (the reader saw it) and 1 s to settle.
    await sleep(1000);
    const c0 = cpuMs(pid);
    const w0 = performance.now();
    await sleep(IDLE_SECONDS * 1000);
    const cpu = cpuMs(pid) - c0;
    const wall = performance.now() - w0;
    idle = { cpuMs: cpu, wallMs: wall, pct: (100 * cpu) / wall };

    // Every row is in the target, with the source's n.
    const src = openDatabase(source, { readonly: true, role: 'source' });
    const tgt = openDatabase(target, { readonly: true, role: 'target' });
    try {
      for (const t of tables) {
        const a = src.prepare(`SELECT id, n FROM ${t} ORDER BY id`).raw().all();
        const b = tgt.prepare(`SELECT id, n FROM ${t} ORDER BY id`).raw().all();
        if (
          JSON.stringify(a, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)) !==
          JSON.stringify(b, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))
        )
          problems.push(`table ${t}: the target differs from the source (${b.length} rows, the source ${a.length})`);
      }
    } finally {
      src.close();
      tgt.close();
    }
  } finally {
    follower.kill('SIGTERM');
    exitCode = await Promise.race([exited(follower), sleep(10_000).then(() => 'timeout' as const)]).then((code) => {
      if (code === 'timeout') {
        follower.kill('SIGKILL');
        return null;
      }
      return code;
    });
    if (KEEP) process.stdout.write(`kept ${dir}\n`);
    else scratch.cleanup();
  }
  if (exitCode !== 0) problems.push(`the follower exited with ${exitCode} after SIGTERM (expected 0)`);
  const { seen: _seen, ...readerStats } = reader ?? { seen: [], wakes: 0, looks: 0, found: { watch: 0, recheck: 0, fallback: 0 } };
  return { checkout: c.name, tables: tableCount, round, phases: results, idle, reader: readerStats, followerExitCode: exitCode, problems };
}

// ---------------------------------------------------------------- the run

const warnings = CHECKOUTS.map(checkBuild).filter((w): w is string => w !== undefined);
for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
process.stdout.write(
  `bench/follow: ${TABLES.map((t) => `${t} table${t === 1 ? '' : 's'}`).join(' and ')}, ${RATES.map((r) => `${r}/s`).join(' then ')} for ${SECONDS} s each, then ${IDLE_SECONDS} s idle; ${ROUNDS} round${ROUNDS === 1 ? '' : 's'}${CHECKOUTS.length > 1 ? `, alternating ${CHECKOUTS.map((c) => c.root).join(' and ')}` : ''}\n`,
);
const calibrations: Awaited<ReturnType<typeof calibrate>>[] = [];
const sessions: Session[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  const cal = await calibrate();
  calibrations.push(cal);
  process.stdout.write(
    `round ${round}: the reader alone on direct writes at ${CALIBRATION.rate}/s: p50 ${fmtMs(cal.latencyMs.p50)} ms, p99 ${fmtMs(cal.latencyMs.p99)} ms, max ${fmtMs(cal.latencyMs.max)} ms (reader CPU ${cal.readerCpuPct.toFixed(1)}%, load ${cal.load.toFixed(2)})\n`,
  );
  // Alternate which checkout goes first, round by round.
  const order = round % 2 === 1 ? CHECKOUTS : [...CHECKOUTS].reverse();
  for (const tables of TABLES)
    for (const c of order) {
      const s = await session(c, tables, round);
      sessions.push(s);
      for (const p of s.phases)
        process.stdout.write(
          `  ${c.name} ${tables}t ${p.rate}/s: p50 ${fmtMs(p.latencyMs.p50)} p99 ${fmtMs(p.latencyMs.p99)} ms, follower ${p.followerCpuPct.toFixed(0)}% CPU (${(1000 * p.followerCpuMsPerWrite).toFixed(0)} us/write), load ${p.loadAvg[1].toFixed(2)}\n`,
        );
      for (const pr of s.problems) process.stdout.write(`  PROBLEM: ${pr}\n`);
    }
}

// ---------------------------------------------------------------- report

const f = (x: number) => (Number.isFinite(x) ? fmtMs(x) : '-');
/** The median over rounds of one figure of one (checkout, tables, rate). */
function med(c: string, tables: number, rate: number, pick: (p: PhaseResult) => number): number {
  return median(
    sessions
      .filter((s) => s.checkout === c && s.tables === tables)
      .flatMap((s) => s.phases.filter((p) => p.rate === rate))
      .map(pick),
  );
}
function medIdle(c: string, tables: number): number {
  return median(sessions.filter((s) => s.checkout === c && s.tables === tables).map((s) => s.idle?.pct ?? Number.NaN));
}
const rows: string[][] = [];
for (const c of CHECKOUTS)
  for (const tables of TABLES)
    for (const rate of RATES)
      rows.push([
        `${c.name === 'this' ? '' : `${c.name} `}${tables}t ${rate}/s`,
        f(med(c.name, tables, rate, (p) => p.achievedPerSec)).replace(/\.\d+$/, ''),
        f(med(c.name, tables, rate, (p) => p.latencyMs.p50)),
        f(med(c.name, tables, rate, (p) => p.latencyMs.p90)),
        f(med(c.name, tables, rate, (p) => p.latencyMs.p99)),
        f(med(c.name, tables, rate, (p) => p.latencyMs.max)),
        `${f(med(c.name, tables, rate, (p) => p.fromStatementStartMs.p50))} / ${f(med(c.name, tables, rate, (p) => p.fromStatementStartMs.p99))}`,
        `${f(med(c.name, tables, rate, (p) => p.sourceCommitMs.p50))} / ${f(med(c.name, tables, rate, (p) => p.sourceCommitMs.p99))}`,
        `${med(c.name, tables, rate, (p) => p.followerCpuPct).toFixed(1)}%`,
        (1000 * med(c.name, tables, rate, (p) => p.followerCpuMsPerWrite)).toFixed(0),
        med(c.name, tables, rate, (p) => p.followerRunQueueMsPerSec).toFixed(0),
        `${med(c.name, tables, rate, (p) => p.readerCpuPct).toFixed(1)}%`,
        med(c.name, tables, rate, (p) => p.loadAvg[1]).toFixed(2),
        `${medIdle(c.name, tables).toFixed(2)}%`,
      ]);
process.stdout.write(
  `\n${ROUNDS > 1 ? `medians of ${ROUNDS} rounds\n` : ''}${renderTable(
    [
      '',
      'achieved/s',
      'p50 ms',
      'p90 ms',
      'p99 ms',
      'max ms',
      'from stmt start p50/p99',
      'src INSERT p50/p99',
      'follower CPU',
      'us CPU/write',
      'run-queue ms/s',
      'reader CPU',
      'load 1m',
      'idle CPU',
    ],
    rows,
  )}\n`,
);
const cal = {
  p50: median(calibrations.map((x) => x.latencyMs.p50)),
  p99: median(calibrations.map((x) => x.latencyMs.p99)),
};
process.stdout.write(
  `the reader's own delay (alone, on direct writes at ${CALIBRATION.rate}/s; included in every figure above, not subtracted): p50 ${f(cal.p50)} ms, p99 ${f(cal.p99)} ms\n`,
);
const verdicts: Record<string, boolean> = {};
for (const tables of TABLES) {
  const ok = (b: boolean) => (b ? 'ok' : 'MISS');
  const p50 = med('this', tables, 1000, (p) => p.latencyMs.p50);
  const p99 = med('this', tables, 1000, (p) => p.latencyMs.p99);
  const p99At10k = med('this', tables, 10_000, (p) => p.latencyMs.p99);
  const idle = medIdle('this', tables);
  verdicts[`${tables}t.p50`] = p50 <= TARGET.p50;
  verdicts[`${tables}t.p99`] = p99 <= TARGET.p99;
  verdicts[`${tables}t.p99At10k`] = p99At10k <= TARGET.p99At10k;
  verdicts[`${tables}t.idleCpu`] = idle < TARGET.idleCpuPct;
  process.stdout.write(
    `target, ${tables} table${tables === 1 ? '' : 's'}: at 1k writes/s p50 <= ${TARGET.p50} ms ${ok(p50 <= TARGET.p50)}, p99 <= ${TARGET.p99} ms ${ok(p99 <= TARGET.p99)}; at 10k writes/s p99 <= ${TARGET.p99At10k} ms ${ok(p99At10k <= TARGET.p99At10k)}; idle CPU < ${TARGET.idleCpuPct}% ${ok(idle < TARGET.idleCpuPct)}\n`,
  );
}
const problems = sessions.flatMap((s) => s.problems.map((p) => `${s.checkout} ${s.tables}t round ${s.round}: ${p}`));
if (problems.length > 0) process.stdout.write(`\nPROBLEMS:\n  ${problems.join('\n  ')}\n`);
for (const w of warnings) process.stdout.write(`\nwarning: ${w}\n`);

const latencyRow = '`sync --follow`, commit on source to commit on target';
const figures: Figure[] = [];
for (const tables of TABLES) {
  // One table keeps the ids of the report's history; five tables get their own.
  const id = (what: string) => (tables === 1 ? `follow.${what}` : `follow.${tables}t.${what}`);
  const label = `${tables} table${tables === 1 ? '' : 's'}`;
  const perWrite = (rate: number) => (1000 * med('this', tables, rate, (p) => p.followerCpuMsPerWrite)).toFixed(0);
  if (RATES.includes(1000)) {
    figures.push({
      id: id('1k.p50'),
      target: latencyRow,
      what: `p50, commit to another process seeing the row, at 1k writes/s, ${label} (follower ${perWrite(1000)} us CPU per write)`,
      value: med('this', tables, 1000, (p) => p.latencyMs.p50),
      unit: 'ms',
      op: '<=',
      limit: TARGET.p50,
    });
    figures.push({
      id: id('1k.p99'),
      target: latencyRow,
      what: `p99, commit to another process seeing the row, at 1k writes/s, ${label}`,
      value: med('this', tables, 1000, (p) => p.latencyMs.p99),
      unit: 'ms',
      op: '<=',
      limit: TARGET.p99,
    });
  }
  if (RATES.includes(10_000))
    figures.push({
      id: id('10k.p99'),
      target: latencyRow,
      what: `p99, commit to another process seeing the row, at 10k writes/s (${Math.round(med('this', tables, 10_000, (p) => p.achievedPerSec))}/s achieved), ${label} (follower ${perWrite(10_000)} us CPU per write)`,
      value: med('this', tables, 10_000, (p) => p.latencyMs.p99),
      unit: 'ms',
      op: '<=',
      limit: TARGET.p99At10k,
    });
  figures.push({
    id: id('idle-cpu'),
    target: '`sync --follow`: idle CPU',
    what: `idle CPU of the follower over ${IDLE_SECONDS} s, ${label} (CPU time / wall time)`,
    value: medIdle('this', tables),
    unit: '% of a core',
    op: '<',
    limit: TARGET.idleCpuPct,
    cpu: medIdle('this', tables),
  });
}
emitFigures('follow', figures);

const outDir = path.join(root, 'bench', 'out');
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(
  path.join(outDir, 'follow.json'),
  `${JSON.stringify(
    {
      bench: 'follow',
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      secondsPerRate: SECONDS,
      idleSeconds: IDLE_SECONDS,
      checkouts: CHECKOUTS,
      method:
        "latency = a separate reader process's first sight of the row (python, inotify on the target's -wal plus a 2 ms fallback, time taken after its read transaction began) minus the writer's commit (python, time after its autocommit INSERT returned), both CLOCK_MONOTONIC; the reader's own delay is measured alone (calibration) and not subtracted. Idle CPU = follower utime+stime from /proc over the idle window.",
      target: TARGET,
      calibrations,
      verdicts,
      sessions,
      ...(warnings.length === 0 ? {} : { warnings }),
    },
    null,
    2,
  )}\n`,
);
process.stdout.write(`\nwrote bench/out/follow.json\n`);
