/*
 * verify of a target that lags its source, against the same verify once the
 * target is caught up: DESIGN.md's "a target 500k events behind costs <= 2x
 * the same verify once caught up" (issue 19: a 1M-row target 900k events
 * behind ran verify for 18 minutes, against 1.8 s caught up).
 *
 *   npx tsx bench/verify-behind.ts [--rows N (1000000)] [--events N (500000)] [--rounds N (3)] [--workload spread|app (both)] [--keep]
 *
 * One run, in a scratch directory: a source t(id INTEGER PRIMARY KEY, name
 * TEXT, n INTEGER, r REAL) of --rows rows, captured, and a mirror of it
 * synced into a target. Then, for each workload below, a copy of both
 * files, --events events written to the copy of the source (transactions of
 * 10k, a fixed pseudo-random sequence), and a copy of its target synced to
 * the end ("current"; the other copy stays --events behind, "behind"). Each
 * round verifies both, one after the other (the order alternates), through
 * the library (no process start), and checks that both are ok.
 *
 * Workloads:
 * - spread: every event an update of a row picked at random from the whole
 *   table (about 40% of the rows change for 500k events on 1M rows): the
 *   most keys per event, the worst case for the rewind, which costs per
 *   event (reading the journal into the changed keys) and per changed key
 *   (one lookup in the source and one in the target).
 * - app: an application's mix: 60% updates (half of them to a hot 1% of the
 *   rows), 25% inserts of new rows, 15% deletes.
 *
 * Judged: behind / current of the spread workload, the median of the
 * rounds' ratios of wall time, against 2 (DESIGN.md). The app workload's
 * ratio, and both in CPU time, are reported beside it.
 *
 * The bound (reported beside it, never judged): each round also times the
 * least part of a rewind that no exact one can skip, on a connection opened
 * as verify opens it: the events' keys alone taken into key order (a bare
 * GROUP BY of the journal's key column over the events after the cursor: no
 * images, no lookups, nothing written). Comparing a changed key at the
 * cursor brings its first event's before image (in the journal, in seq
 * order) to its target row (in key order): either the events are sorted by
 * key, which costs at least that GROUP BY, or each changed key is looked up
 * in seq order, which is dearer (measured for issue 23, 1M rows, 500k spread
 * events, CPU: GROUP BY of the keys 210-250 ms; de-duplicating the keys in
 * JS 90-120 ms plus 393k random-order lookups of the target 165 ms and of
 * the source 165 ms; the caught-up verify 218 ms). So (current + that sort)
 * / current is a floor for the ratio: at about 2 for the spread workload,
 * before a single image is read or a single row compared, 2x is out of reach
 * for a verify that compares every changed key at the cursor.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { enable } from '../src/capture/enable.ts';
import { openDatabase, type Db } from '../src/sqlite/connection.ts';
import { sync } from '../src/apply/sync/sync.ts';
import { verify } from '../src/apply/check/verify.ts';
import { useRewindPageSize } from '../src/apply/check/verify-rewind.ts';
import { openApplySession } from '../src/apply/target/session.ts';
import { JOURNAL_TABLE, journalColumn } from '../src/capture/schema.ts';
import { emitFigures, type Figure } from './lib/figures.ts';
import { fmtMs, intFlag, makeScratch, median, renderTable } from './lib/workload.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(
    'usage: npx tsx bench/verify-behind.ts [--rows N (1000000)] [--events N (500000)] [--rounds N (3)] [--workload spread|app (both)] [--keep]\n',
  );
  process.exit(0);
}
const ROWS = intFlag(argv, 'rows', 1_000_000);
const EVENTS = intFlag(argv, 'events', 500_000);
const ROUNDS = intFlag(argv, 'rounds', 3);
const KEEP = argv.includes('--keep');
const LIMIT = 2;
const CHUNK = 10_000;

type Workload = 'spread' | 'app';
const ALL: readonly Workload[] = ['spread', 'app'];
const only = argv.includes('--workload') ? argv[argv.indexOf('--workload') + 1] : undefined;
if (only !== undefined && !ALL.includes(only as Workload)) {
  process.stderr.write(`--workload takes ${ALL.join(' or ')}, not ${only}\n`);
  process.exit(2);
}
const WORKLOADS: readonly Workload[] = only === undefined ? ALL : [only as Workload];

const { dir, cleanup } = makeScratch('sluice-bench-verify-behind-');
const log = (s: string) => process.stdout.write(`${s}\n`);

/** A fixed pseudo-random sequence (mulberry32), so every run writes the same events. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const journalMax = (db: Db) => Number(db.prepare('SELECT coalesce(max(seq), 0) FROM _sluice_journal').pluck().get() as bigint);

/** Writes `EVENTS` captured events of `workload` to `db`, in transactions of CHUNK; the seqs they took, (lo, hw]. */
function write(db: Db, workload: Workload): { lo: number; hw: number } {
  const rand = random(workload === 'spread' ? 1 : 2);
  const pick = (n: number) => 1 + Math.floor(rand() * n);
  const update = db.prepare('UPDATE t SET n = n + 1, name = ? WHERE id = ?');
  const insert = db.prepare('INSERT INTO t (id, name, n, r) VALUES (?, ?, 0, ?)');
  const remove = db.prepare('DELETE FROM t WHERE id = ?');
  const start = journalMax(db);
  let next = ROWS + 1;
  let i = 0;
  while (journalMax(db) - start < EVENTS) {
    const left = EVENTS - (journalMax(db) - start);
    db.transaction(() => {
      for (let k = 0; k < Math.min(CHUNK, left); k++, i++) {
        if (workload === 'spread') {
          update.run(`spread ${i}`, pick(ROWS));
          continue;
        }
        const x = rand();
        if (x < 0.3) update.run(`hot ${i}`, pick(Math.max(1, Math.floor(ROWS / 100))));
        else if (x < 0.6) update.run(`app ${i}`, pick(ROWS));
        else if (x < 0.85) insert.run(next++, `new ${i}`, rand());
        else remove.run(pick(ROWS));
      }
    })();
  }
  return { lo: start, hw: journalMax(db) };
}

interface Measured {
  readonly wall: number;
  readonly cpu: number;
}

async function timedVerify(source: string, target: string, behind: boolean): Promise<Measured> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await verify(source, target);
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const p = r.projections[0];
  if (!r.ok || p === undefined || p.inFlight > 0 !== behind)
    throw new Error(`verify of ${target} is not as expected: ${JSON.stringify(r)}`);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

/**
 * The bound's sort (see the top): the keys of the events in (lo, hw] taken
 * into key order, one row per key, on a connection set up as verify's
 * (openApplySession, useRewindPageSize); only the statement is timed. The
 * events' first image holds the key (t's id, the journal's first column)
 * for every op. Returns the keys it found beside the time, for the check
 * that it sorted exactly the keys verify rewinds.
 */
function timedKeySort(source: string, target: string, lo: number, hw: number): Measured & { keys: number } {
  const session = openApplySession(source, target, { readonly: true });
  try {
    useRewindPageSize(session.db);
    const sql = `SELECT count(*) FROM (SELECT ${journalColumn(0)} AS k, min(seq) FROM main.${JOURNAL_TABLE} WHERE seq > ? AND seq <= ? GROUP BY k)`;
    const st = session.db.prepare(sql).pluck();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const keys = Number(st.get(lo, hw) as bigint);
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    return { wall, cpu: (c.user + c.system) / 1000, keys };
  } finally {
    session.close();
  }
}

// The base: ROWS rows, captured, and a mirror synced from them.
const base = { source: path.join(dir, 'source.db'), target: path.join(dir, 'target.db') };
{
  const t0 = performance.now();
  const db = openDatabase(base.source, { create: true, wal: true });
  db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER, r REAL);
  WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS})
    INSERT INTO t SELECT i, 'row ' || i, i % 97, i / 7.0 FROM c;`);
  enable(db, ['t']);
  db.close();
  await sync(base.source, base.target);
  log(`base: ${ROWS} rows synced in ${fmtMs(performance.now() - t0)}`);
}

interface Result {
  readonly workload: Workload;
  readonly changedKeys: number;
  readonly rows: number;
  readonly current: Measured[];
  readonly behind: Measured[];
  /** The bound's sort of the events' keys (timedKeySort), one per round. */
  readonly sort: Measured[];
}

/** A copy of the base file `from` at `to` (a checkpointed WAL file: the database file alone holds every page). */
function copy(from: string, to: string): void {
  const db = openDatabase(from);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  fs.copyFileSync(from, to);
}

const results: Result[] = [];
for (const workload of WORKLOADS) {
  const t0 = performance.now();
  const source = path.join(dir, `${workload}-source.db`);
  const behind = path.join(dir, `${workload}-behind.db`);
  const current = path.join(dir, `${workload}-current.db`);
  copy(base.source, source);
  copy(base.target, behind);
  // The copy's cursor names the base source's file: verify (as sync) reads a cursor taken on another file as
  // FILE_CHANGED and compares nothing, so the copy is synced to the copied source first (a rebuild), at its seq.
  await sync(source, behind);
  const db = openDatabase(source);
  let range: { lo: number; hw: number };
  try {
    range = write(db, workload);
  } finally {
    db.close();
  }
  copy(behind, current);
  await sync(source, current);
  log(`${workload}: ${EVENTS} events written and a copy of the target synced in ${fmtMs(performance.now() - t0)}`);
  const rounds: { current: Measured; behind: Measured; sort: Measured & { keys: number } }[] = [];
  let changedKeys = 0;
  let rows = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const one = async (lagging: boolean) => timedVerify(source, lagging ? behind : current, lagging);
    // The sort first, between and last in turn: each of the three in each place.
    const sortAt = r % 3;
    let sort: (Measured & { keys: number }) | undefined;
    const sortHere = (at: number) => {
      if (at === sortAt) sort = timedKeySort(source, behind, range.lo, range.hw);
    };
    sortHere(0);
    const first = await one(r % 2 === 1);
    sortHere(1);
    const second = await one(r % 2 === 0);
    sortHere(2);
    const [a, b] = r % 2 === 0 ? [first, second] : [second, first];
    rounds.push({ current: a, behind: b, sort: sort as Measured & { keys: number } });
    log(
      `  round ${r + 1}: current ${fmtMs(a.wall)}, behind ${fmtMs(b.wall)}, keys sorted ${fmtMs((sort as Measured).wall)} (CPU ${fmtMs(a.cpu)}, ${fmtMs(b.cpu)}, ${fmtMs((sort as Measured).cpu)})`,
    );
  }
  {
    const v = await verify(source, behind);
    changedKeys = v.projections[0]?.inFlight ?? 0;
    rows = v.projections[0]?.checked ?? 0;
  }
  // The bound sorts the keys verify rewinds, no more, no fewer.
  for (const r of rounds)
    if (r.sort.keys !== changedKeys) throw new Error(`the bound's sort found ${r.sort.keys} keys, verify ${changedKeys}`);
  results.push({
    workload,
    changedKeys,
    rows,
    current: rounds.map((x) => x.current),
    behind: rounds.map((x) => x.behind),
    sort: rounds.map((x) => x.sort),
  });
}

const ratio = (r: Result, m: keyof Measured) => median(r.behind.map((b, i) => b[m] / (r.current[i] as Measured)[m]));
/** (current + the keys' sort) / current: the bound (see the top). */
const bound = (r: Result, m: keyof Measured) =>
  median(r.sort.map((s, i) => ((r.current[i] as Measured)[m] + s[m]) / (r.current[i] as Measured)[m]));
log(
  renderTable(
    [
      'workload',
      'rows',
      'events behind',
      'keys changed',
      'current (median)',
      'behind (median)',
      'keys sorted (median)',
      'behind / current',
      'in CPU time',
      'bound',
      'bound in CPU time',
    ],
    results.map((r) => [
      r.workload,
      String(r.rows),
      String(EVENTS),
      String(r.changedKeys),
      fmtMs(median(r.current.map((m) => m.wall))),
      fmtMs(median(r.behind.map((m) => m.wall))),
      fmtMs(median(r.sort.map((m) => m.wall))),
      `${ratio(r, 'wall').toFixed(2)}x`,
      `${ratio(r, 'cpu').toFixed(2)}x`,
      `${bound(r, 'wall').toFixed(2)}x`,
      `${bound(r, 'cpu').toFixed(2)}x`,
    ]),
  ),
);
log(
  `uptime: ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);

const target = 'verify: a target 500k events behind costs <= 2x the same verify once caught up';
const figures: Figure[] = results.flatMap((r): Figure[] => [
  {
    id: `verify.behind.${r.workload}.vs-current`,
    target,
    what: `verify of a ${ROWS}-row mirror ${EVENTS} events behind (${r.workload}: ${r.changedKeys} keys changed) / the same verify once caught up, median of ${ROUNDS} rounds, wall time`,
    value: ratio(r, 'wall'),
    unit: 'x',
    op: r.workload === 'spread' ? '<=' : 'none',
    limit: LIMIT,
    cpu: ratio(r, 'cpu'),
    floor: {
      id: `verify.caught-up.${r.workload}`,
      what: `verify of the caught-up ${ROWS}-row mirror (${r.workload}), median wall time`,
      perSecond: r.rows / (median(r.current.map((m) => m.wall)) / 1000),
      unit: 'rows/s',
    },
  },
  {
    id: `verify.behind.${r.workload}.bound`,
    target,
    what: `the least the ratio can be for a verify that compares each changed key at the cursor: (the caught-up verify + a bare sort of the events' ${r.changedKeys} keys, no images read, no row compared) / the caught-up verify, median of ${ROUNDS} rounds, wall time`,
    value: bound(r, 'wall'),
    unit: 'x',
    op: 'none',
    limit: LIMIT,
    cpu: bound(r, 'cpu'),
  },
  {
    id: `verify.behind.${r.workload}.vs-current.cpu`,
    target,
    what: `the same in CPU time (${r.workload})`,
    value: ratio(r, 'cpu'),
    unit: 'x',
    op: 'none',
    limit: LIMIT,
  },
  {
    id: `verify.behind.${r.workload}.current`,
    target,
    what: `verify of the caught-up ${ROWS}-row mirror (${r.workload}), median wall time`,
    value: median(r.current.map((m) => m.wall)),
    unit: 'ms',
    op: 'none',
    limit: 0,
  },
]);
emitFigures('verify-behind', figures);
if (KEEP) log(`kept ${dir}`);
else cleanup();
