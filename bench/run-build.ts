/*
 * `sluice run` while one target builds a million rows: issue 21's must-hold
 * "while one target builds 1M rows, /healthz answers within 1 s and another
 * target's p99 latency stays within 2x of its figure without the build".
 *
 *   npx tsx bench/run-build.ts [--rows N (1000000)] [--rate N (200)] [--base N (5)] [--kind mirror|fts5 (mirror)] [--keep]
 *
 * One run process (the compiled CLI, node bin/sluice.js: build dist/ first),
 * in a scratch directory:
 * - source.db (WAL): big(id, v, n) with --rows rows and s(id, v), both
 *   captured. The pipeline file declares one target, small.db (a mirror of
 *   s), and listens on a loopback port.
 * - an external python3 writer commits one INSERT into s per transaction at
 *   --rate until told to stop, logging when each commit returned.
 * - for --base seconds the run follows small.db alone (the figure without
 *   the build); then big.db (a mirror of big, its first build) is added to
 *   the file, which the run takes in by its file watch (small.db's part is
 *   unchanged and keeps running), until the run logs big.db built.
 *   --kind fts5 builds an fts5 index of big.v instead: a build that costs
 *   its thread several times more CPU.
 * - latency: this process polls small.db (count(*) every ~1 ms; ids are
 *   inserted in order) and notes when each row was first seen, minus its
 *   commit. p99 over the rows committed in each window: without the build
 *   (the base window, its first second left out) and during it (from the
 *   file change to the `built` log line).
 * - /healthz: a GET every 100 ms from this process; the slowest response
 *   time in each window (connect to last byte).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { enable } from '../src/capture/enable.ts';
import { openDatabase, type Db } from '../src/sqlite/connection.ts';
import { intFlag, makeScratch, renderTable } from './lib/workload.ts';
import { emitFigures } from './lib/figures.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(
    'usage: npx tsx bench/run-build.ts [--rows N (1000000)] [--rate N (200)] [--base N (5)] [--kind mirror|fts5 (mirror)] [--keep]\n',
  );
  process.exit(0);
}
const rows = intFlag(argv, 'rows', 1_000_000);
const rate = intFlag(argv, 'rate', 200);
const baseS = intFlag(argv, 'base', 5);
const keep = argv.includes('--keep');
const kindAt = argv.indexOf('--kind');
const kind = kindAt === -1 ? 'mirror' : argv[kindAt + 1];
if (kind !== 'mirror' && kind !== 'fts5') {
  process.stderr.write(`--kind is mirror or fts5, not ${kind}\n`);
  process.exit(2);
}
const bigProjection =
  kind === 'mirror' ? '{name: big, source: big, kind: mirror}' : '{name: big_fts, source: big, kind: fts5, columns: [v]}';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin', 'sluice.js');
/** Extra node options for the run process (e.g. --cpu-prof --cpu-prof-dir=DIR). */
const nodeArgs = (process.env.SLUICE_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

const WRITER = String.raw`
import json, os, sqlite3, sys, time
src, rate, stop, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
con = sqlite3.connect(src, isolation_level=None)
con.execute("PRAGMA busy_timeout = 5000")
con.execute("PRAGMA synchronous = NORMAL")
t0 = time.time()
done = []
k = 0
while not os.path.exists(stop):
    due = t0 + k / rate
    now = time.time()
    if due > now: time.sleep(due - now)
    con.execute("INSERT INTO s (id, v) VALUES (?, ?)", (k + 1, "row %d of the small table" % k))
    done.append(time.time())
    k += 1
json.dump({"done": done}, open(out, "w"))
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0));
    });
  });
}

/** The run's JSON log lines as they come, each with the time it was read. */
function logOf(child: ChildProcess): { lines: { ms: number; line: Record<string, unknown> }[] } {
  const out = { lines: [] as { ms: number; line: Record<string, unknown> }[] };
  let rest = '';
  child.stderr?.on('data', (d: Buffer) => {
    const parts = (rest + d.toString()).split('\n');
    rest = parts.pop() ?? '';
    for (const p of parts)
      if (p.startsWith('{')) out.lines.push({ ms: Date.now(), line: JSON.parse(p) as Record<string, unknown> });
      else if (p.trim() !== '') process.stderr.write(`run: ${p}\n`);
  });
  return out;
}

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const { dir, cleanup } = makeScratch('sluice-bench-run-build-');
let run: ChildProcess | undefined;
try {
  const src = path.join(dir, 'source.db');
  const small = path.join(dir, 'small.db');
  const config = path.join(dir, 'sluice.yml');
  const stopFile = path.join(dir, 'stop');
  const db = openDatabase(src, { create: true, wal: true });
  db.exec('CREATE TABLE big (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)');
  db.exec('CREATE TABLE s (id INTEGER PRIMARY KEY, v TEXT)');
  db.prepare(
    `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
     INSERT INTO big (id, v, n) SELECT i, 'row ' || i || ' of the big table, a line of text', i * 7 FROM k`,
  ).run(rows);
  enable(db, ['big', 's']);
  db.close();

  const port = await freePort();
  const smallOnly = `sources:
  - path: source.db
    capture: [big, s]
    targets:
      - path: small.db
        projections: [{name: s, source: s, kind: mirror}]
listen: 127.0.0.1:${port}
`;
  fs.writeFileSync(config, smallOnly);
  run = spawn(process.execPath, [...nodeArgs, bin, 'run', '--config', config, '--log', 'json'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const log = logOf(run);
  await until(
    'small.db following',
    () => log.lines.some((l) => l.line.event === 'start' && String(l.line.msg).startsWith('following')),
    60_000,
  );

  // The writer, and the pollers: small.db's count, /healthz.
  const writerPy = path.join(dir, 'writer.py');
  const writerOut = path.join(dir, 'writer.json');
  fs.writeFileSync(writerPy, WRITER);
  const writer = spawn('python3', [writerPy, src, String(rate), stopFile, writerOut], { stdio: 'inherit' });
  const writerExit = new Promise<number | null>((r) => writer.on('exit', r));
  const seen: number[] = []; // seen[id - 1] = ms first seen in small.db
  let polling = true;
  const poller = (async () => {
    let target: Db | undefined;
    let count = 0;
    while (polling) {
      try {
        target ??= openDatabase(small, { readonly: true, role: 'target' });
        const c = Number(target.prepare('SELECT count(*) FROM s').pluck().get());
        const now = Date.now();
        for (let id = count + 1; id <= c; id++) seen[id - 1] = now;
        count = Math.max(count, c);
      } catch {
        /* not built yet */
      }
      await sleep(1);
    }
    target?.close();
  })();
  const health: { ms: number; took: number; code: number }[] = [];
  const healthPoller = (async () => {
    while (polling) {
      const t0 = performance.now();
      const ms = Date.now();
      try {
        const r = await fetch(`http://127.0.0.1:${port}/healthz`);
        await r.text();
        health.push({ ms, took: performance.now() - t0, code: r.status });
      } catch {
        health.push({ ms, took: performance.now() - t0, code: 0 });
      }
      await sleep(100);
    }
  })();

  const baseFrom = Date.now() + 1000;
  await sleep(baseS * 1000);
  // The new target: a first build of `rows` rows, taken in by the run's watch of its file.
  const buildFrom = Date.now();
  fs.writeFileSync(config, smallOnly.replace('listen:', `      - path: big.db\n        projections: [${bigProjection}]\nlisten:`));
  const isBuilt = (l: { line: Record<string, unknown> }) =>
    l.line.event === 'built' && String(l.line.part).includes('big.db') && String(l.line.msg).includes(`${rows} rows`);
  await until('big.db built', () => log.lines.some(isBuilt), 30 * 60_000);
  const buildTo = (log.lines.find(isBuilt) as { ms: number }).ms;
  const reloaded = log.lines.find((l) => l.line.event === 'reload' && l.ms >= buildFrom);
  await sleep(1000);
  fs.writeFileSync(stopFile, '');
  if ((await writerExit) !== 0) throw new Error('the writer failed');
  const done = (JSON.parse(fs.readFileSync(writerOut, 'utf8')) as { done: number[] }).done.map((t) => t * 1000);
  await until('small.db caught up', () => seen.length >= done.length && seen[done.length - 1] !== undefined, 60_000);
  polling = false;
  await Promise.all([poller, healthPoller]);

  const window = (from: number, to: number) => {
    const lat = done.flatMap((t, k) => (t >= from && t < to ? [(seen[k] as number) - t] : []));
    const hz = health.filter((h) => h.ms >= from && h.ms < to);
    return {
      p50: pct(lat, 50),
      p99: pct(lat, 99),
      max: Math.max(...lat),
      rows: lat.length,
      hzMax: Math.max(...hz.map((h) => h.took)),
      hzN: hz.length,
      hzFailed: hz.filter((h) => h.code !== 200 && h.code !== 503).length,
    };
  };
  const base = window(baseFrom, buildFrom);
  const during = window(buildFrom, buildTo);
  const ms = (x: number) => x.toFixed(1);
  const row = (name: string, w: ReturnType<typeof window>) => [
    name,
    ms(w.p50),
    ms(w.p99),
    ms(w.max),
    String(w.rows),
    ms(w.hzMax),
    `${w.hzN}${w.hzFailed > 0 ? ` (${w.hzFailed} failed)` : ''}`,
  ];
  const ratio = during.p99 / base.p99;
  process.stdout.write(
    `${renderTable(
      ['small.db', 'p50 ms', 'p99 ms', 'max ms', 'rows', '/healthz max ms', '/healthz GETs'],
      [row('without the build', base), row('during the build', during)],
    )}\n` +
      `big.db's first build (${kind}): ${rows} rows in ${((buildTo - buildFrom) / 1000).toFixed(1)} s (file change to its built log line; reload seen after ${reloaded === undefined ? '?' : reloaded.ms - buildFrom} ms)\n` +
      `p99 during/without the build: ${ratio.toFixed(2)}x (target <= 2x)\n` +
      `/healthz slowest during the build: ${ms(during.hzMax)} ms (target <= 1000 ms)\n` +
      `${rate} writes/s into s; load average ${os.loadavg()[0]?.toFixed(2)}\n`,
  );
  const id = kind === 'mirror' ? 'run-build' : 'run-build-fts5';
  emitFigures(id, [
    {
      id: `${id}.p99-during-build`,
      target: `sluice run, another target while one builds 1M rows (${kind})`,
      what: "another target's p99 commit -> visible during a 1M-row first build, over its p99 without it",
      value: ratio,
      unit: 'x',
      op: '<=',
      limit: 2,
    },
    {
      id: `${id}.healthz-max`,
      target: `sluice run, /healthz while one target builds 1M rows (${kind})`,
      what: 'slowest /healthz response during the build',
      value: during.hzMax,
      unit: 'ms',
      op: '<=',
      limit: 1000,
    },
  ]);
} finally {
  if (run !== undefined && run.exitCode === null) {
    const exited = new Promise((r) => run?.on('exit', r));
    run.kill('SIGTERM');
    await exited;
  }
  if (keep) process.stdout.write(`kept ${dir}\n`);
  else cleanup();
}
