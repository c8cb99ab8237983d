/*
 * Feed (read side) against the DESIGN.md performance targets (issue 3,
 * "Performance (bench)"):
 *
 *   npx tsx bench/feed.ts [--rows 1000000] [--calls 10000] [--rounds 2] [--batch 1000]
 *
 * One process (plus one child for memory), one run, reported as ratios to a
 * baseline measured in the same run:
 * - the source: t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b
 *   BLOB) with 32-byte blobs, captured in images mode, then `--rows` rows
 *   inserted by one INSERT ... SELECT, so the journal holds `--rows` events.
 * - snapshot: rows/s copying every row into an empty target table of the same
 *   shape, one target transaction each, compared with a raw `INSERT INTO
 *   main.t SELECT * FROM src.t` over an attached source (the baseline):
 *     js         snapshot(db, ['t'], { onRow }) on a read-only source
 *                connection, onRow binding each row into a prepared INSERT on
 *                the target connection (the JS callback path: every value
 *                crosses into JS and back);
 *     set-based  the library's own set-based path: sync() of a mirror
 *                projection into a fresh target, whose first step reads the
 *                high-water mark and runs INSERT ... SELECT from the source in
 *                one transaction (Syncer.open included in the time);
 *     progress   the same sync with progress asked for (onProgress, as on a
 *                terminal or with --log json): the table counted and read in
 *                parts of 20,000 rows, each reported; beside its ratio, the
 *                longest time without a report (DESIGN.md: progress shown at
 *                least once a second).
 *   The ratio is the median over `--rounds` of the per-round ratio.
 * - changedSince: median, p90 and p99 latency of `--calls` calls (after a
 *   warm-up) with the snapshot's cursor on the `--rows`-event journal, each
 *   timed on its own with hrtime.
 * - readBatch: events/s reading every event from the start of the journal in
 *   batches of `--batch` (and 10x that), decoding them into ChangeEvents.
 * - memory: in a child process (so nothing of this process's setup counts),
 *   peak RSS while it snapshots the source into a target through the JS path
 *   and then catches up over every journal event (upserting each into the
 *   target), sampled every 1,000 rows/events. The child is plain node on the
 *   compiled modules (bench/lib/rss-child.js; `npm run build` first when run
 *   alone, the report builds them): under tsx its loader's thread was about
 *   120 MB of the figure.
 *
 * Results: a table on stdout and bench/out/feed.json. Bench only: a MISS
 * does not change the exit code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { openDatabase, type Db } from '../src/sqlite/connection.ts';
import { enable } from '../src/capture/enable.ts';
import { snapshot } from '../src/feed/snapshot.ts';
import { readBatch, journalStartCursor } from '../src/feed/batch.ts';
import { changedSince } from '../src/feed/changed-since.ts';
import { sync } from '../src/apply/sync/sync.ts';
import { toBindable } from '../src/sqlite/codec.ts';
import { fmtRatio, intFlag, makeScratch, median, renderTable } from './lib/workload.ts';
import { emitFigures } from './lib/figures.ts';
import { RAW_COPY_SQL } from './lib/floors.ts';

const DDL = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)';
const INSERT = 'INSERT INTO t (id, name, n, r, b) VALUES (?, ?, ?, ?, ?)';

const argv = process.argv.slice(2);

if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write('usage: npx tsx bench/feed.ts [--rows N (1000000)] [--calls N (10000)] [--rounds N (2)] [--batch N (1000)]\n');
  process.exit(0);
}
const known = new Set(['--rows', '--calls', '--rounds', '--batch']);
for (let i = 0; i < argv.length; i += 2) {
  if (!known.has(String(argv[i]))) {
    process.stderr.write(`unknown argument ${String(argv[i])}; see --help\n`);
    process.exit(2);
  }
}
const ROWS = intFlag(argv, 'rows', 1_000_000);
const CALLS = intFlag(argv, 'calls', 10_000);
const ROUNDS = intFlag(argv, 'rounds', 2);
const BATCH = intFlag(argv, 'batch', 1000);
const TARGETS = { snapshotRatio: 0.8, changedSinceUs: 50, rssMb: 200, progressGapMs: 1000 } as const;

const scratch = makeScratch('sluice-bench-feed-');
const file = (name: string) => path.join(scratch.dir, name);

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function fmtRate(perSec: number): string {
  return perSec >= 1e6 ? `${(perSec / 1e6).toFixed(2)}M/s` : `${(perSec / 1e3).toFixed(1)}k/s`;
}

function discard(p: string): void {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(p + suffix, { force: true });
}

function freshTarget(name: string, withTable = true): { db: Db; path: string } {
  const p = file(name);
  discard(p);
  const db = openDatabase(p, { create: true, role: 'target', wal: true });
  if (withTable) db.exec(DDL);
  return { db, path: p };
}

function buildSource(): string {
  const p = file('src.db');
  const db = openDatabase(p, { create: true, role: 'bench', wal: true });
  db.exec(DDL);
  enable(db, ['t']);
  const t0 = performance.now();
  db.transaction(() => {
    db.prepare(
      `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?)
       INSERT INTO t (id, name, n, r, b) SELECT i, 'name-' || i, i * 7, i / 3.0, randomblob(32) FROM s`,
    ).run(ROWS);
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  log(`source: ${ROWS} rows and ${ROWS} journal events in ${(performance.now() - t0).toFixed(0)} ms`);
  db.close();
  return p;
}

/** This process's CPU time (user + system), ms: every path below runs in it. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
/** CPU ms of the last rawCopy, jsSnapshot and setBasedSnapshot call. */
const lastCpu = { raw: 0, js: 0, set: 0 };

function rawCopy(source: string): number {
  const { db, path: p } = freshTarget('raw.db');
  db.prepare('ATTACH DATABASE ? AS src').run(source);
  const c0 = cpuMs();
  const t0 = performance.now();
  db.transaction(() => db.prepare(RAW_COPY_SQL).run())();
  const ms = performance.now() - t0;
  lastCpu.raw = cpuMs() - c0;
  db.close();
  discard(p);
  return (ROWS / ms) * 1000;
}

function jsSnapshot(source: string): { perSec: number; cursor: string } {
  const src = openDatabase(source, { readonly: true });
  const { db, path: p } = freshTarget('js.db');
  const ins = db.prepare(INSERT);
  const c0 = cpuMs();
  const t0 = performance.now();
  let cursor = '';
  db.transaction(() => {
    cursor = snapshot(src, ['t'], { onRow: (_t, row) => ins.run(row.map(toBindable)) }).cursor;
  })();
  const ms = performance.now() - t0;
  lastCpu.js = cpuMs() - c0;
  const copied = (db.prepare('SELECT count(*) FROM t').pluck().get() as bigint) === BigInt(ROWS);
  db.close();
  src.close();
  discard(p);
  if (!copied) throw new Error('js snapshot: the target does not hold every row');
  return { perSec: (ROWS / ms) * 1000, cursor };
}

/** rows/s of a sync of a mirror into a new target; with `progress`, also the longest time (ms) from the start to a report, between two, or from the last to the end. */
async function setBasedSnapshot(source: string, progress = false): Promise<{ perSec: number; longestGapMs: number }> {
  const p = file('set.db');
  discard(p);
  let last = 0;
  let longestGapMs = 0;
  const gap = () => {
    const now = performance.now();
    longestGapMs = Math.max(longestGapMs, now - last);
    last = now;
  };
  const c0 = cpuMs();
  const t0 = performance.now();
  last = t0;
  const report = await sync(source, p, {
    projections: [{ name: 't', source: 't', kind: 'mirror' }],
    acknowledge: false,
    ...(progress ? { onProgress: gap } : {}),
  });
  const ms = performance.now() - t0;
  if (!progress) lastCpu.set = cpuMs() - c0;
  if (progress) gap();
  discard(p);
  const rows = report.projections[0]?.snapshotRows;
  if (rows !== ROWS) throw new Error(`set-based snapshot copied ${String(rows)} rows, expected ${ROWS}`);
  return { perSec: (ROWS / ms) * 1000, longestGapMs };
}

function changedSinceLatency(source: string, cursor: string): { median: number; p90: number; p99: number } {
  const db = openDatabase(source, { readonly: true });
  for (let i = 0; i < 1000; i++) changedSince(db, cursor, ['t']);
  const us: number[] = [];
  let changed = 0;
  for (let i = 0; i < CALLS; i++) {
    const t0 = process.hrtime.bigint();
    const r = changedSince(db, cursor, ['t']);
    us.push(Number(process.hrtime.bigint() - t0) / 1000);
    if (r.changed) changed++;
  }
  db.close();
  if (changed !== 0) throw new Error('changedSince said changed on an idle source');
  us.sort((a, b) => a - b);
  const at = (q: number) => us[Math.min(us.length - 1, Math.floor(q * us.length))] as number;
  return { median: median(us), p90: at(0.9), p99: at(0.99) };
}

function batchThroughput(source: string, limit: number): number {
  const db = openDatabase(source, { readonly: true });
  let cursor = journalStartCursor(db, ['t']);
  let events = 0;
  const t0 = performance.now();
  for (;;) {
    const b = readBatch(db, cursor, { limit });
    events += b.events.length;
    cursor = b.to;
    if (!b.hasMore) break;
  }
  const ms = performance.now() - t0;
  db.close();
  if (events !== ROWS) throw new Error(`readBatch read ${events} events, expected ${ROWS}`);
  return (events / ms) * 1000;
}

interface RssReport {
  readonly startMb: number;
  readonly peakMb: number;
  readonly snapshotRows: number;
  readonly catchUpEvents: number;
  readonly ms: number;
}

function measureRss(source: string): RssReport {
  const target = file('rss.db');
  discard(target);
  // Plain node on the compiled modules (bench/lib/rss-child.js), not under tsx, whose loader thread is no part of sluice's memory.
  const child = fileURLToPath(new URL('./lib/rss-child.js', import.meta.url));
  const r = spawnSync(process.execPath, [child, source, target], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  discard(target);
  if (r.status !== 0) throw new Error(`rss child failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) as string) as RssReport;
}

async function main(): Promise<void> {
  const source = buildSource();
  const raw: number[] = [];
  const js: number[] = [];
  const set: number[] = [];
  const shown: number[] = [];
  const gaps: number[] = [];
  // CPU ms per round of the raw copy, the JS path and the set-based sync (the same rows each).
  const rawCpu: number[] = [];
  const jsCpu: number[] = [];
  const setCpu: number[] = [];
  let cursor = '';
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate the order so that neither side always runs on a warmer cache.
    const r1 = round % 2 === 0 ? rawCopy(source) : 0;
    const r1Cpu = lastCpu.raw;
    const j = jsSnapshot(source);
    jsCpu.push(lastCpu.js);
    cursor = j.cursor;
    // The order of the two set-based syncs alternates too.
    const first = await setBasedSnapshot(source, round % 2 === 1);
    const second = await setBasedSnapshot(source, round % 2 === 0);
    const [s, sp] = round % 2 === 0 ? [first, second] : [second, first];
    setCpu.push(lastCpu.set);
    const r = round % 2 === 0 ? r1 : rawCopy(source);
    rawCpu.push(round % 2 === 0 ? r1Cpu : lastCpu.raw);
    raw.push(r);
    js.push(j.perSec);
    set.push(s.perSec);
    shown.push(sp.perSec);
    gaps.push(sp.longestGapMs);
    log(
      `round ${round + 1}/${ROUNDS}: raw INSERT...SELECT ${fmtRate(r)}; js snapshot ${fmtRate(j.perSec)} (${fmtRatio(j.perSec / r)}); set-based ${fmtRate(s.perSec)} (${fmtRatio(s.perSec / r)}); with progress ${fmtRate(sp.perSec)} (${fmtRatio(sp.perSec / r)}), longest time without a report ${sp.longestGapMs.toFixed(0)} ms`,
    );
  }
  const jsRatio = median(js.map((v, i) => v / (raw[i] as number)));
  const setRatio = median(set.map((v, i) => v / (raw[i] as number)));
  const shownRatio = median(shown.map((v, i) => v / (raw[i] as number)));
  const longestGap = Math.max(...gaps);
  // The same ratios in CPU time: rows/s of a path over the raw copy's is the raw copy's CPU ms over the path's.
  const jsCpuRatio = median(jsCpu.map((c, i) => (rawCpu[i] as number) / c));
  const setCpuRatio = median(setCpu.map((c, i) => (rawCpu[i] as number) / c));
  const floor = {
    id: 'feed.raw-insert-select',
    what: 'raw INSERT INTO main.t SELECT * FROM src.t over an attached source, one transaction',
    perSecond: median(raw),
    unit: 'rows/s',
  };

  const lat = changedSinceLatency(source, cursor);
  log(`changedSince over ${CALLS} calls: median ${lat.median.toFixed(1)} us, p90 ${lat.p90.toFixed(1)} us, p99 ${lat.p99.toFixed(1)} us`);
  const batchSmall = batchThroughput(source, BATCH);
  const batchLarge = batchThroughput(source, BATCH * 10);
  log(`readBatch: ${fmtRate(batchSmall)} (limit ${BATCH}), ${fmtRate(batchLarge)} (limit ${BATCH * 10})`);
  const rss = measureRss(source);
  log(
    `child: snapshot ${rss.snapshotRows} rows + catch-up ${rss.catchUpEvents} events in ${(rss.ms / 1000).toFixed(1)} s, RSS ${rss.startMb.toFixed(0)} MB at start, peak ${rss.peakMb.toFixed(0)} MB`,
  );

  const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
  const table = renderTable(
    ['measure', 'value', 'ratio', 'target', 'verdict'],
    [
      ['raw INSERT ... SELECT (baseline)', fmtRate(median(raw)), '1.00x', '', ''],
      [
        `snapshot, ${ROWS} rows, JS callback path`,
        fmtRate(median(js)),
        `${fmtRatio(jsRatio)} (cpu ${fmtRatio(jsCpuRatio)})`,
        `>= ${TARGETS.snapshotRatio}x`,
        verdict(jsRatio >= TARGETS.snapshotRatio),
      ],
      [
        `snapshot, ${ROWS} rows, set-based (sync mirror)`,
        fmtRate(median(set)),
        `${fmtRatio(setRatio)} (cpu ${fmtRatio(setCpuRatio)})`,
        `>= ${TARGETS.snapshotRatio}x`,
        verdict(setRatio >= TARGETS.snapshotRatio),
      ],
      [
        `snapshot, ${ROWS} rows, set-based with progress shown`,
        fmtRate(median(shown)),
        fmtRatio(shownRatio),
        `>= ${TARGETS.snapshotRatio}x`,
        verdict(shownRatio >= TARGETS.snapshotRatio),
      ],
      [
        'longest time without a progress report',
        `${longestGap.toFixed(0)} ms`,
        '-',
        `<= ${TARGETS.progressGapMs} ms`,
        verdict(longestGap <= TARGETS.progressGapMs),
      ],
      [
        `changedSince median, ${ROWS}-event journal`,
        `${lat.median.toFixed(1)} us`,
        '-',
        `<= ${TARGETS.changedSinceUs} us`,
        verdict(lat.median <= TARGETS.changedSinceUs),
      ],
      ['changedSince p99', `${lat.p99.toFixed(1)} us`, '-', '', ''],
      [`readBatch, limit ${BATCH}`, fmtRate(batchSmall), '-', '', ''],
      [`readBatch, limit ${BATCH * 10}`, fmtRate(batchLarge), '-', '', ''],
      [
        'peak RSS, snapshot + catch-up (child)',
        `${rss.peakMb.toFixed(0)} MB`,
        '-',
        `<= ${TARGETS.rssMb} MB`,
        verdict(rss.peakMb <= TARGETS.rssMb),
      ],
    ],
  );
  process.stdout.write(
    `\n${table}\n\nsnapshot ratio: median over ${ROUNDS} rounds of the per-round ratio to that round's raw copy. readBatch: events/s.\n`,
  );
  const out = {
    rows: ROWS,
    rounds: ROUNDS,
    snapshot: {
      rawRowsPerSec: raw,
      jsRowsPerSec: js,
      setBasedRowsPerSec: set,
      withProgressRowsPerSec: shown,
      longestProgressGapMs: gaps,
      jsRatio,
      setRatio,
      shownRatio,
    },
    changedSince: { calls: CALLS, medianUs: lat.median, p90Us: lat.p90, p99Us: lat.p99 },
    readBatch: { [BATCH]: batchSmall, [BATCH * 10]: batchLarge },
    rss,
    targets: TARGETS,
  };
  const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'feed.json'), `${JSON.stringify(out, null, 2)}\n`);
  const snap = 'snapshot vs raw INSERT … SELECT';
  emitFigures('feed', [
    {
      id: 'feed.snapshot.set-based',
      target: snap,
      what: `snapshot, set-based (sync of a mirror), ${ROWS} rows`,
      value: setRatio,
      cpu: setCpuRatio,
      floor,
      unit: 'x',
      op: '>=',
      limit: TARGETS.snapshotRatio,
    },
    {
      id: 'feed.snapshot.set-based-progress',
      target: snap,
      what: `snapshot, set-based with progress shown (rows of the total, each 20000-row part reported), ${ROWS} rows`,
      value: shownRatio,
      floor,
      unit: 'x',
      op: '>=',
      limit: TARGETS.snapshotRatio,
    },
    {
      id: 'feed.snapshot.progress-gap',
      target: 'snapshot, 1M rows: progress shown at least once a second',
      what: `longest time without a progress report during a ${ROWS}-row snapshot`,
      value: longestGap,
      unit: 'ms',
      op: '<=',
      limit: TARGETS.progressGapMs,
    },
    {
      id: 'feed.snapshot.js',
      target: snap,
      what: `snapshot, JS callback path (onRow binding each row into a prepared INSERT), ${ROWS} rows; bounded far below the target by reading a row into JS and writing it back one at a time (docs/feed.md, bench/snapshot-js-path.ts)`,
      value: jsRatio,
      cpu: jsCpuRatio,
      floor,
      unit: 'x',
      op: '>=',
      limit: TARGETS.snapshotRatio,
    },
    {
      id: 'feed.changed-since.median',
      target: '"changed since?" check',
      what: `changedSince median, ${ROWS}-event journal`,
      value: lat.median,
      unit: 'us',
      op: '<=',
      limit: TARGETS.changedSinceUs,
    },
    {
      id: 'feed.rss.snapshot-catch-up',
      target: 'snapshot plus catch-up: peak RSS',
      what: `peak RSS, snapshot + catch-up of ${ROWS} rows/events (child in plain node on the compiled modules, bench/lib/rss-child.js)`,
      value: rss.peakMb,
      unit: 'MB',
      op: '<=',
      limit: TARGETS.rssMb,
    },
  ]);
  log(`wrote ${path.relative(process.cwd(), path.join(outDir, 'feed.json'))}`);
}

try {
  await main();
} finally {
  scratch.cleanup();
}
