/*
 * `sync --follow` latency and idle CPU against the DESIGN.md performance
 * target: source commit -> target commit p50 <= 0.5 ms and p99 <= 5 ms at
 * 1k writes/s, p99 <= 20 ms at 10k writes/s; idle CPU < 2% of a core.
 *
 *   npx tsx bench/follow.ts [--seconds N (5)] [--idle N (10)] [--rates 100,1000,10000] [--keep] [--cpu-prof DIR]
 *
 * One run:
 * - a scratch directory with source.db: t(id INTEGER PRIMARY KEY, v TEXT,
 *   n INTEGER), capture enabled on t (images mode, src/capture/enable.ts),
 *   WAL. The target cache.db sits in the same directory (the usual layout,
 *   so the follower's directory watch also sees the target's own writes).
 * - the follower: `node bin/sluice.js sync source.db cache.db --follow
 *   --log json` as a child process (the compiled CLI in dist/: run
 *   `npm run build` first; the bench warns when src/ is newer than dist/).
 *   Its first pass snapshots the empty table; writing starts after that.
 * - the writer: a separate python3 process (sqlite3 module, which knows
 *   nothing of sluice), one connection, autocommit, synchronous=NORMAL,
 *   busy_timeout 5000. It commits single-row INSERTs on a fixed schedule:
 *   each rate of --rates (default 100, 1,000 and 10,000 writes/s) for
 *   --seconds, with a 1 s pause between them (start times k/rate after the phase start; a late write goes
 *   at once, so the mean rate holds). Each row carries its statement start
 *   time (time.time(), µs since the epoch) in n and its phase in v; the
 *   writer also logs, per id, the time its INSERT (and so its commit)
 *   returned.
 *
 * How latency is measured: with --log json the follower writes one JSON
 * line to stderr after every target transaction it commits (phase
 * "catch-up", the seq the target now holds, and t = Date.now() taken right
 * after COMMIT returned). A write's target commit time is the t of the first
 * such line whose seq is >= the write's seq (read back from the source
 * journal after the run). Date.now() is whole milliseconds (floored), so
 * 0.5 ms is added (the midpoint; each figure is +-0.5 ms). Latency =
 * target commit - source commit, where source commit is when the writer's
 * autocommit INSERT returned. "from stmt start" uses the time stamped in
 * the row instead, so it also counts the source statement itself and any
 * wait for the source's write lock. Both processes read the same system
 * clock (CLOCK_REALTIME). The target is checked afterwards: every written
 * row is there with the same n.
 *
 * Idle CPU: after the last write is applied and 1 s to settle, the
 * follower's utime+stime from /proc/<pid>/stat over --idle seconds, as % of
 * one core. The same counter is sampled over each write phase (shown for
 * context), with the follower's run-queue wait (ms per second its main
 * thread was runnable but had no CPU, /proc/<pid>/schedstat) and the
 * 1-minute load average. The machine is shared (2 cores for the writer, the
 * follower, this process and whatever else runs), so the tails depend on
 * the load: read p99 next to the run-queue column, and compare runs made
 * at similar load. The follower's stderr goes to a file, not a pipe (a
 * pipe write would wake this process, which could then take the CPU from
 * the follower mid-pass).
 *
 * Results: a table on stdout and bench/out/follow.json. Bench only: a MISS
 * does not change the exit code. --keep keeps the scratch directory, with
 * the follower's stderr (follower.log) and the writer's log (writer.json).
 * --cpu-prof DIR runs the follower with node --cpu-prof (the profile is
 * written to DIR when it exits on SIGTERM), for profiling the follow path.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { enable } from '../src/capture/enable.ts';
import { openDatabase } from '../src/sqlite/connection.ts';
import { readSourceView } from '../src/feed/source-view.ts';
import { readEventsInRange } from '../src/feed/batch.ts';
import { fmtMs, intFlag, makeScratch, renderTable } from './lib/workload.ts';
import { emitFigures } from './lib/figures.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(
    'usage: npx tsx bench/follow.ts [--seconds N (5, per write rate)] [--idle N (10)] [--rates 100,1000,10000] [--keep (keep the scratch directory)] [--cpu-prof DIR (profile the follower)]\n',
  );
  process.exit(0);
}
for (let i = 0; i < argv.length; i++) {
  const a = String(argv[i]);
  if (a === '--keep') continue;
  if (a === '--seconds' || a === '--idle' || a === '--cpu-prof' || a === '--rates') {
    i++;
    continue;
  }
  process.stderr.write(`unknown argument ${a}; see --help\n`);
  process.exit(2);
}
const SECONDS = intFlag(argv, 'seconds', 5);
const IDLE_SECONDS = intFlag(argv, 'idle', 10);
const KEEP = argv.includes('--keep');
const CPU_PROF = argv.includes('--cpu-prof') ? path.resolve(String(argv[argv.indexOf('--cpu-prof') + 1])) : undefined;
const RATES: readonly number[] = argv.includes('--rates')
  ? String(argv[argv.indexOf('--rates') + 1])
      .split(',')
      .map(Number)
  : [100, 1000, 10_000];
if (RATES.some((r) => !Number.isSafeInteger(r) || r < 1)) {
  process.stderr.write('--rates takes whole numbers of writes/s separated by commas, e.g. 100,1000,10000\n');
  process.exit(2);
}
/** DESIGN.md: p50 <= 0.5 ms and p99 <= 5 ms at 1k writes/s, p99 <= 20 ms at 10k writes/s, idle CPU < 2% of a core. */
const TARGET = { p50: 0.5, p99: 5, p99At10k: 20, idleCpuPct: 2 };

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin', 'sluice.js');

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

function checkBuild(): string | undefined {
  const compiled = path.join(root, 'dist', 'src', 'cli', 'main.js');
  if (!fs.existsSync(compiled))
    return 'dist/ is missing: bin/sluice.js runs the sources through tsx. Run `npm run build` for figures of the compiled CLI.';
  if (newestMtime(path.join(root, 'src')) > fs.statSync(compiled).mtimeMs)
    return 'src/ has changes newer than dist/: the follower runs the older build. Run `npm run build` first.';
  return undefined;
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * Milliseconds the follower's main thread spent runnable but waiting for a
 * CPU (/proc/<pid>/schedstat, field 2), or NaN where schedstat is missing.
 * On a shared machine this is the part of the latency no code change helps.
 */
function runQueueMs(pid: number): number {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return Number.NaN;
  }
}

/** utime + stime of a process, in ms. */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] as number;
}

function stats(values: readonly number[]) {
  const s = [...values].sort((a, b) => a - b);
  return {
    n: s.length,
    p50: quantile(s, 0.5),
    p90: quantile(s, 0.9),
    p99: quantile(s, 0.99),
    max: s.length === 0 ? Number.NaN : (s[s.length - 1] as number),
    mean: s.reduce((a, b) => a + b, 0) / Math.max(1, s.length),
  };
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
  process.stderr.write('bench/follow needs python3 with the sqlite3 module for the external writer.\n');
  process.exit(1);
}

// ---------------------------------------------------------------- the writer

const WRITER = String.raw`
import json, sqlite3, sys, time
db, spec, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
con = sqlite3.connect(db, isolation_level=None, timeout=5.0)
con.execute("PRAGMA busy_timeout = 5000")
con.execute("PRAGMA synchronous = NORMAL")
ids, t0s, t1s, late = [], [], [], []
next_id = 1
for i, phase in enumerate(spec["phases"]):
    if i > 0:
        time.sleep(spec["gapSeconds"])
    rate, count, tag = phase["rate"], phase["rate"] * phase["seconds"], phase["tag"]
    print(json.dumps({"event": "start", "tag": tag}), flush=True)
    start = time.time() + 0.01
    for k in range(count):
        due = start + k / rate
        now = time.time()
        if due > now:
            time.sleep(due - now)
        t0 = time.time()
        con.execute("INSERT INTO t (id, v, n) VALUES (?, ?, ?)", (next_id, tag, int(t0 * 1e6)))
        t1 = time.time()
        ids.append(next_id); t0s.append(t0); t1s.append(t1); late.append(t0 - due)
        next_id += 1
    print(json.dumps({"event": "end", "tag": tag}), flush=True)
con.close()
with open(out, "w") as f:
    json.dump({"ids": ids, "t0": t0s, "t1": t1s, "late": late}, f)
`;

interface WriterLog {
  readonly ids: number[];
  readonly t0: number[];
  readonly t1: number[];
  readonly late: number[];
}

// ---------------------------------------------------------------- the follower

interface Pass {
  readonly t: number;
  readonly seq: number;
}

interface Follower {
  readonly child: ChildProcess;
  readonly passes: Pass[];
  /** Highest seq the target has reported committing (catch-up or current). */
  seq: number;
  readonly stderrOther: string[];
  readonly exited: Promise<number | null>;
  /** Reads what the follower has logged since the last call. */
  poll(): void;
}

/*
 * The follower's stderr goes to a file, not a pipe (see the top): it is read
 * while waiting (not during the write phases) and once more at the end.
 */
function startFollower(source: string, target: string): Follower {
  const logPath = path.join(path.dirname(source), 'follower.log');
  const fd = fs.openSync(logPath, 'w');
  const nodeArgs = CPU_PROF === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', CPU_PROF];
  const child = spawn(process.execPath, [...nodeArgs, bin, 'sync', source, target, '--follow', '--log', 'json'], {
    stdio: ['ignore', 'ignore', fd],
    env: { ...process.env },
  });
  fs.closeSync(fd);
  let offset = 0;
  let partial = '';
  const f: Follower = {
    child,
    passes: [],
    seq: -1,
    stderrOther: [],
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
    poll() {
      const text = fs.readFileSync(logPath);
      const chunk = partial + text.subarray(offset).toString('utf8');
      offset = text.length;
      const lines = chunk.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        let ev: { t?: number; phase?: string; seq?: number } | undefined;
        try {
          ev = JSON.parse(line) as typeof ev;
        } catch {
          ev = undefined;
        }
        if (ev === undefined || typeof ev.t !== 'number' || typeof ev.seq !== 'number') {
          if (f.stderrOther.length < 50) f.stderrOther.push(line);
          continue;
        }
        if (ev.phase === 'catch-up') f.passes.push({ t: ev.t, seq: ev.seq });
        if (ev.phase === 'catch-up' || ev.phase === 'current' || ev.phase === 'snapshot') f.seq = Math.max(f.seq, ev.seq);
        if (ev.phase === 'suspended') f.stderrOther.push(line);
      }
    },
  };
  return f;
}

async function until(what: string, cond: () => boolean, timeoutMs: number, f: Follower): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    f.poll();
    if (cond()) return;
    if (f.child.exitCode !== null)
      throw new Error(`the follower exited (${f.child.exitCode}) while waiting for ${what}: ${f.stderrOther.join('\n')}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

// ---------------------------------------------------------------- the run

const buildWarning = checkBuild();
if (buildWarning !== undefined) process.stderr.write(`warning: ${buildWarning}\n`);
const py = python();
const scratch = makeScratch('sluice-bench-follow-');
const dir = scratch.dir;
const sourcePath = path.join(dir, 'source.db');
const targetPath = path.join(dir, 'cache.db');
const writerPy = path.join(dir, 'writer.py');
const writerOut = path.join(dir, 'writer.json');
fs.writeFileSync(writerPy, WRITER);

{
  const db = openDatabase(sourcePath, { create: true, role: 'source', wal: true });
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)');
  enable(db, ['t']);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

process.stdout.write(
  `bench/follow: ${RATES.map((r) => `${r}/s`).join(' then ')} for ${SECONDS} s each, then ${IDLE_SECONDS} s idle (scratch ${dir})\n`,
);
const follower = startFollower(sourcePath, targetPath);
const pid = follower.child.pid as number;
let exitCode: number | null = null;
const phaseCpu = new Map<
  string,
  { cpu0: number; rq0: number; t0: number; load0: number; cpu?: number; rq?: number; wall?: number; load?: number }
>();
let idle: { cpuMs: number; wallMs: number; pct: number } | undefined;
let writerLog: WriterLog;
try {
  await until('the first pass (snapshot)', () => follower.seq >= 0, 30_000, follower);
  await sleep(500);

  // The writer, a separate process. Its stdout marks phase boundaries (for per-phase CPU).
  const spec = { phases: RATES.map((rate) => ({ rate, seconds: SECONDS, tag: `r${rate}` })), gapSeconds: 1 };
  const writer = spawn(py, [writerPy, sourcePath, JSON.stringify(spec), writerOut], { stdio: ['ignore', 'pipe', 'pipe'] });
  let writerErr = '';
  writer.stderr?.on('data', (d: Buffer) => (writerErr += d.toString()));
  readline.createInterface({ input: writer.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const m = JSON.parse(line) as { event: string; tag: string };
    if (m.event === 'start')
      phaseCpu.set(m.tag, { cpu0: cpuMs(pid), rq0: runQueueMs(pid), t0: performance.now(), load0: os.loadavg()[0] as number });
    else {
      const p = phaseCpu.get(m.tag);
      if (p !== undefined) {
        p.cpu = cpuMs(pid) - p.cpu0;
        p.rq = runQueueMs(pid) - p.rq0;
        p.load = os.loadavg()[0] as number;
        p.wall = performance.now() - p.t0;
      }
    }
  });
  const writerCode = await new Promise<number | null>((resolve) => writer.on('exit', (code) => resolve(code)));
  if (writerCode !== 0) throw new Error(`the writer failed (${writerCode}): ${writerErr}`);
  writerLog = JSON.parse(fs.readFileSync(writerOut, 'utf8')) as WriterLog;

  // Wait for the follower to apply the last write.
  const hw = (() => {
    const db = openDatabase(sourcePath, { readonly: true, role: 'source' });
    try {
      return readSourceView(db).hw;
    } finally {
      db.close();
    }
  })();
  await until(`the target to reach seq ${hw}`, () => follower.seq >= hw, 60_000, follower);

  // Idle CPU.
  await sleep(1000);
  const c0 = cpuMs(pid);
  const w0 = performance.now();
  await sleep(IDLE_SECONDS * 1000);
  const cpu = cpuMs(pid) - c0;
  const wall = performance.now() - w0;
  idle = { cpuMs: cpu, wallMs: wall, pct: (100 * cpu) / wall };
} finally {
  follower.child.kill('SIGTERM');
  exitCode = await Promise.race([follower.exited, sleep(10_000).then(() => 'timeout' as const)]).then((c) => {
    if (c === 'timeout') {
      follower.child.kill('SIGKILL');
      return null;
    }
    return c;
  });
}

// ---------------------------------------------------------------- analysis

follower.poll();

// Each write's seq, from the source journal (the bench's inserts are its only events).
const seqOf = new Map<number, number>();
const src = openDatabase(sourcePath, { readonly: true, role: 'source' });
try {
  const view = readSourceView(src);
  const t = view.tables.get('t')?.table;
  if (t === undefined) throw new Error('t is not captured');
  for (const e of readEventsInRange(src, [t], 0, view.hw)) {
    if (e.op !== 'insert') throw new Error(`unexpected ${e.op} event at seq ${e.seq}`);
    seqOf.set(Number(e.key[0] as bigint | number), e.seq);
  }
} finally {
  src.close();
}

// The target holds every row, with the source's n.
const problems: string[] = [];
{
  const tgt = openDatabase(targetPath, { readonly: true, role: 'target' });
  try {
    const rows = tgt.prepare('SELECT id, n FROM t').raw().all() as [bigint, bigint][];
    const byId = new Map(rows.map(([id, n]) => [Number(id), Number(n)]));
    if (byId.size !== writerLog.ids.length) problems.push(`target has ${byId.size} rows, the writer wrote ${writerLog.ids.length}`);
    writerLog.ids.forEach((id, i) => {
      if (byId.get(id) !== Math.trunc((writerLog.t0[i] as number) * 1e6) && problems.length < 5)
        problems.push(`target row ${id} has n=${byId.get(id)}, expected ${Math.trunc((writerLog.t0[i] as number) * 1e6)}`);
    });
  } finally {
    tgt.close();
  }
}
if (exitCode !== 0) problems.push(`the follower exited with ${exitCode} after SIGTERM (expected 0)`);

const passes = [...follower.passes].sort((a, b) => a.seq - b.seq);
/** The first pass that committed seq >= s. */
function passFor(s: number): Pass | undefined {
  let lo = 0;
  let hi = passes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((passes[mid] as Pass).seq >= s) hi = mid;
    else lo = mid + 1;
  }
  return passes[lo];
}

interface PhaseResult {
  rate: number;
  writes: number;
  achievedPerSec: number;
  latencyMs: ReturnType<typeof stats>;
  fromStatementStartMs: ReturnType<typeof stats>;
  sourceCommitMs: ReturnType<typeof stats>;
  writerLateMs: ReturnType<typeof stats>;
  targetTransactions: number;
  followerCpuPct: number | null;
  /** Follower main thread's run-queue wait (runnable, no CPU) per second of the phase, in ms. */
  followerRunQueueMsPerSec: number | null;
  /** 1-minute load average at the start and end of the phase (the machine is shared). */
  loadAvg: [number, number] | null;
}

const phases: PhaseResult[] = [];
let offset = 0;
for (const rate of RATES) {
  const count = rate * SECONDS;
  const lat: number[] = [];
  const fromStart: number[] = [];
  const commit: number[] = [];
  const late: number[] = [];
  const passSeqs = new Set<number>();
  for (let i = offset; i < offset + count; i++) {
    const id = writerLog.ids[i] as number;
    const t0 = (writerLog.t0[i] as number) * 1000;
    const t1 = (writerLog.t1[i] as number) * 1000;
    const seq = seqOf.get(id);
    const pass = seq === undefined ? undefined : passFor(seq);
    if (pass === undefined) {
      if (problems.length < 10) problems.push(`no target commit found for write ${id} (seq ${seq})`);
      continue;
    }
    passSeqs.add(pass.seq);
    const tt = pass.t + 0.5;
    lat.push(tt - t1);
    fromStart.push(tt - t0);
    commit.push(t1 - t0);
    late.push((writerLog.late[i] as number) * 1000);
  }
  const first = (writerLog.t0[offset] as number) * 1000;
  const last = (writerLog.t0[offset + count - 1] as number) * 1000;
  const cpu = phaseCpu.get(`r${rate}`);
  phases.push({
    rate,
    writes: count,
    achievedPerSec: count > 1 ? ((count - 1) * 1000) / (last - first) : Number.NaN,
    latencyMs: stats(lat),
    fromStatementStartMs: stats(fromStart),
    sourceCommitMs: stats(commit),
    writerLateMs: stats(late),
    targetTransactions: passSeqs.size,
    followerCpuPct: cpu?.cpu !== undefined && cpu.wall !== undefined ? (100 * cpu.cpu) / cpu.wall : null,
    followerRunQueueMsPerSec:
      cpu?.rq !== undefined && cpu.wall !== undefined && Number.isFinite(cpu.rq) ? (1000 * cpu.rq) / cpu.wall : null,
    loadAvg: cpu?.load !== undefined ? [cpu.load0, cpu.load] : null,
  });
  offset += count;
}

// ---------------------------------------------------------------- report

const f = (x: number) => (Number.isFinite(x) ? fmtMs(x) : '-');
const rows = phases.map((p) => [
  `${p.rate}/s`,
  String(p.writes),
  p.achievedPerSec.toFixed(0),
  f(p.latencyMs.p50),
  f(p.latencyMs.p99),
  f(p.latencyMs.max),
  `${f(p.fromStatementStartMs.p50)} / ${f(p.fromStatementStartMs.p99)}`,
  `${f(p.sourceCommitMs.p50)} / ${f(p.sourceCommitMs.p99)}`,
  String(p.targetTransactions),
  p.followerCpuPct === null ? '-' : `${p.followerCpuPct.toFixed(1)}%`,
  p.followerRunQueueMsPerSec === null ? '-' : p.followerRunQueueMsPerSec.toFixed(0),
  p.loadAvg === null ? '-' : p.loadAvg.map((x) => x.toFixed(1)).join('/'),
]);
process.stdout.write(
  `\n${renderTable(['rate', 'writes', 'achieved/s', 'p50 ms', 'p99 ms', 'max ms', 'from stmt start p50/p99', 'src INSERT p50/p99', 'target txns', 'follower CPU', 'run-queue ms/s', 'load 1m'], rows)}\n`,
);
process.stdout.write(
  `\nidle CPU of the follower over ${IDLE_SECONDS} s: ${idle === undefined ? '-' : `${idle.pct.toFixed(2)}% of one core (${idle.cpuMs.toFixed(0)} ms CPU in ${(idle.wallMs / 1000).toFixed(1)} s; /proc resolution ${(1000 / CLK_TCK).toFixed(0)} ms)`}\n`,
);
const at1k = phases.find((p) => p.rate === 1000);
const at10k = phases.find((p) => p.rate === 10_000);
const verdicts = {
  p50: at1k !== undefined && at1k.latencyMs.p50 <= TARGET.p50,
  p99: at1k !== undefined && at1k.latencyMs.p99 <= TARGET.p99,
  p99At10k: at10k !== undefined && at10k.latencyMs.p99 <= TARGET.p99At10k,
  idleCpu: idle !== undefined && idle.pct < TARGET.idleCpuPct,
};
process.stdout.write(
  `\ntarget at 1k writes/s: p50 <= ${TARGET.p50} ms ${verdicts.p50 ? 'ok' : 'MISS'}, p99 <= ${TARGET.p99} ms ${verdicts.p99 ? 'ok' : 'MISS'}; at 10k writes/s: p99 <= ${TARGET.p99At10k} ms ${verdicts.p99At10k ? 'ok' : 'MISS'}; idle CPU < ${TARGET.idleCpuPct}% ${verdicts.idleCpu ? 'ok' : 'MISS'}\n`,
);
process.stdout.write(
  'method: latency = follower stderr `--log json` catch-up line time (Date.now() right after the target COMMIT, +0.5 ms for its 1 ms floor) of the first target transaction holding the write\'s seq, minus the time the writer\'s autocommit INSERT returned (python time.time()). "from stmt start" uses the time stamped in the row before the INSERT.\n',
);
if (problems.length > 0) process.stdout.write(`\nPROBLEMS:\n  ${problems.join('\n  ')}\n`);
if (buildWarning !== undefined) process.stdout.write(`\nwarning: ${buildWarning}\n`);

const latencyRow = '`sync --follow`, source commit to target commit';
emitFigures('follow', [
  ...(at1k === undefined
    ? []
    : [
        {
          id: 'follow.1k.p50',
          target: latencyRow,
          what: `p50 latency at 1k writes/s (${at1k.writes} writes)`,
          value: at1k.latencyMs.p50,
          unit: 'ms',
          op: '<=' as const,
          limit: TARGET.p50,
        },
        {
          id: 'follow.1k.p99',
          target: latencyRow,
          what: `p99 latency at 1k writes/s (${at1k.writes} writes)`,
          value: at1k.latencyMs.p99,
          unit: 'ms',
          op: '<=' as const,
          limit: TARGET.p99,
        },
      ]),
  ...(at10k === undefined
    ? []
    : [
        {
          id: 'follow.10k.p99',
          target: latencyRow,
          what: `p99 latency at 10k writes/s (${at10k.writes} writes, ${Math.round(at10k.achievedPerSec)}/s achieved)`,
          value: at10k.latencyMs.p99,
          unit: 'ms',
          op: '<=' as const,
          limit: TARGET.p99At10k,
        },
      ]),
  ...(idle === undefined
    ? []
    : [
        {
          id: 'follow.idle-cpu',
          target: '`sync --follow`: idle CPU',
          what: `idle CPU of the follower over ${IDLE_SECONDS} s`,
          value: idle.pct,
          unit: '% of a core',
          op: '<' as const,
          limit: TARGET.idleCpuPct,
        },
      ]),
]);

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
      method:
        'latency = target commit (follower --log json catch-up line, Date.now() after COMMIT, +0.5 ms) of the first target transaction with seq >= the write seq, minus source commit (writer time.time() after its autocommit INSERT returned); fromStatementStart uses the row-stamped time before the INSERT. Idle CPU = follower utime+stime from /proc over the idle window.',
      target: TARGET,
      verdicts,
      phases,
      idle,
      followerExitCode: exitCode,
      problems,
      ...(buildWarning === undefined ? {} : { buildWarning }),
    },
    null,
    2,
  )}\n`,
);
process.stdout.write(`\nwrote bench/out/follow.json\n`);
if (KEEP) process.stdout.write(`kept ${dir}\n`);
else scratch.cleanup();
