/*
 * Apply throughput against the DESIGN.md performance target (issue 4, "Fast
 * path" and "Performance (bench)"):
 *
 *   npx tsx bench/apply.ts [--events 200000] [--base 100000] [--rounds 3] [--batch N] [--slow-events N]
 *
 * One process, one run, reported as ratios to a baseline measured in the
 * same run:
 * - baseline: a raw `INSERT INTO tgt.t SELECT * FROM main.t` of `--events`
 *   rows of t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)
 *   (32-byte blobs) between two attached WAL file databases, one
 *   transaction, as rows/s, on a connection opened like the applier's
 *   (openDatabase defaults, so the same synchronous level).
 * - the source: `--base` rows written before capture, then `enable(db,
 *   ['t'])` (images mode), a snapshot sync of every projection (not timed),
 *   then `--events` mixed writes (50% inserts, 35% updates of which 1% change
 *   the key, 15% deletes; random live keys, so some keys change several
 *   times in one batch, and updates move rows into and out of the map
 *   filter), committed 1,000 statements per transaction.
 * - timed: `Syncer.runOnce()` catching one projection up over all events
 *   (batches of `--batch`, default the Syncer's own), as events/s, for
 *   mirror, map (a filter and a computed column), fts5 (external content)
 *   and custom (a Kysely mirror). Syncer.open is not timed.
 * - context: a naive JS loop over the same events, hand-written over the raw
 *   journal rows (per batch one transaction; per event a SELECT of the target
 *   row compared with the before-image, then DELETE / upsert); and the same
 *   mirror catch-up as one single transaction (--batch = all events), which
 *   shows what the per-batch commits cost; and a floor: the target writes
 *   alone, in one transaction, with the keys to write or delete worked out
 *   beforehand (not timed) and no check at all. It is not an applier (it
 *   reads the answer from the source table); any correct applier writes at
 *   least these rows, so its ratio bounds what any applier can reach here;
 *   and a raw INSERT … SELECT of the batch's journal rows (the changes as
 *   captured, both images), another reading of "the same rows"; and a read
 *   floor: one pass reading every column of the batch's journal rows, nothing
 *   written. The read and write floors added bound any applier (printed).
 *
 * Each round copies the pristine post-snapshot targets to fresh files (the
 * source is read-only for the applier, apart from its acknowledgement row),
 * so every round applies exactly the same events. The paired variants run
 * every round between two baselines, in an order that rotates; a ratio is the
 * median over rounds of variant / that round's baseline (the machine is
 * noisy: two cores, other jobs). Each is given for wall time (the judged
 * number) and for this process's CPU time, which other load disturbs less.
 * fts5 and custom run once (custom is per-event JS and slow), on the first
 * `--slow-events` events (default: all). Every timed target is checked
 * against the source afterwards (not timed). Results: a table on stdout and
 * bench/out/apply.json. Bench only: a MISS does not change the exit code.
 * The figures the benchmark report (bench/report.ts) judges are DESIGN.md's
 * (restated for issue 23): the mirror's events/s over the floor's (the read
 * floor's time plus the write floor's, per round, median), >= 0.5 for these
 * mixed events (keys changed several times in a batch), and >= 0.8 for a
 * second scenario whose events touch each key once: a source of its own
 * (src-once.db: `--base` rows, then `--events` changes of the same mix,
 * each updated or deleted key drawn once, each inserted key never touched
 * again), measured in rounds of its own (mirror, the same mirror with the
 * plain path off so every batch is grouped by key as before issue 23, and
 * both floors, in a rotating order). Each figure carries its floor's
 * events/s (Figure.floor) and its CPU-time twin (Figure.cpu). The table's
 * ">= 0.5x of the raw copy" is the older target. `--only mirror` runs the
 * two mirror scenarios alone (bench/out/apply-mirror.json).
 * Hand edits (issue 19, docs/projections.md "Hand edits of a target"): the
 * same mirror catch-up with the Syncer's watch of the target off
 * (`watchTarget: false`; on is the default, the `mirror` row). Judged: the
 * CPU time inside the watch's own calls in the runs with it on, over the
 * floor's CPU time, at most 5%. Beside it, as context: the median per round
 * of (on - off) / the floor's time, each way the least of three alternating
 * runs in the round, in CPU and wall time, with its value per round. That
 * difference would also hold a cost the watch caused in SQLite's own work,
 * but it is the difference of two ~700 ms runs and cannot resolve a few ms
 * (40 interleaved pairs: 4.2 +- 6.4 ms against a ~110 ms floor; a trace of
 * the target's files showed the same writes and syncs on and off:
 * docs/projections.md); and
 * with the opt-in guard triggers of `sluice protect` on the target, reported
 * beside it.
 * Skipping unread updates (issue 22, bench/lib/skip-unread.ts): an fts5
 * index over title and ~3.7 KB bodies of `--skip-rows` issues, and
 * `--skip-updates` updates of which 90% change only comment_count, applied
 * by the same code with the skip on and off (applier.ts `skipUnread`), same
 * events, same run: off's time over on's, judged >= 5x in wall time (CPU
 * beside it). `--only skip` runs this alone (bench/out/apply-skip.json).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { DEFAULT_BATCH, Syncer, type SyncReport } from '../src/apply/sync/sync.ts';
import { plainPath } from '../src/projection/kinds/relational/table.ts';
import { verify } from '../src/apply/check/verify.ts';
import { enable } from '../src/capture/enable.ts';
import { protect } from '../src/apply/edits/protect.ts';
import { TargetWatch } from '../src/apply/edits/target-watch.ts';
import { openDatabase, type Db } from '../src/sqlite/connection.ts';
import { readSourceView } from '../src/feed/source-view.ts';
import { toBindable } from '../src/sqlite/codec.ts';
import type { CustomHandler, ProjectionDefinition } from '../src/projection/definition.ts';
import type { Row } from '../src/feed/events.ts';
import { prng } from '../fixtures/tracker.ts';
import { fmtRatio, intFlag, makeScratch, median, renderTable } from './lib/workload.ts';
import { emitFigures, type Figure } from './lib/figures.ts';
import { journalReadFloorSql, WRITE_FLOOR_SQL, writeFloorKeysSql } from './lib/floors.ts';
import { runSkipUnread, type SkipUnreadResult } from './lib/skip-unread.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(
    'usage: npx tsx bench/apply.ts [--events N (200000)] [--base N (100000)] [--rounds N (3)] [--batch N (Syncer default)] [--slow-events N (all)]\n' +
      '                              [--skip-rows N (20000)] [--skip-updates N (20000)] [--only skip|mirror (just the skip of unread updates | the mirror against its floor, mixed and each key once)]\n',
  );
  process.exit(0);
}
const known = new Set(['--events', '--base', '--rounds', '--batch', '--slow-events', '--skip-rows', '--skip-updates', '--only']);
for (let i = 0; i < argv.length; i += 2) {
  if (!known.has(String(argv[i]))) {
    process.stderr.write(`unknown argument ${String(argv[i])}; see --help\n`);
    process.exit(2);
  }
}
const EVENTS = intFlag(argv, 'events', 200_000);
const BASE = intFlag(argv, 'base', 100_000, 0);
const ROUNDS = intFlag(argv, 'rounds', 3);
const BATCH: number | undefined = argv.includes('--batch') ? intFlag(argv, 'batch', 10_000) : undefined;
const SLOW_EVENTS = Math.min(intFlag(argv, 'slow-events', EVENTS), EVENTS);
/** Issue 22: the fts5 index over title and body, and updates of which 90% change only a counter (bench/lib/skip-unread.ts). */
const SKIP_ROWS = intFlag(argv, 'skip-rows', 20_000);
const SKIP_UPDATES = intFlag(argv, 'skip-updates', 20_000);
/** The skip of unread updates at least this many times faster than the same code without it, same events, same run. */
const SKIP_SPEEDUP = 5;
const ONLY = argv.includes('--only') ? String(argv[argv.indexOf('--only') + 1]) : undefined;
if (ONLY !== undefined && ONLY !== 'skip' && ONLY !== 'mirror') {
  process.stderr.write(`--only takes "skip" or "mirror"; see --help\n`);
  process.exit(2);
}
/** The Syncer's default batch size for a mirror (src/apply/sync/sync.ts), used by the naive loop when --batch is not given. */
const NAIVE_BATCH = BATCH ?? DEFAULT_BATCH.setBased;
const TARGET_RATIO = 0.5;
/**
 * DESIGN.md's targets (restated for issue 23): mirror apply of a batch that
 * touches each key once at least this share of the floor (one read of the
 * batch's journal rows plus the target writes alone, measured in the same
 * run), and of a mixed batch with repeated keys at least MIXED_FLOOR_RATIO.
 */
const ONCE_FLOOR_RATIO = 0.8;
const MIXED_FLOOR_RATIO = 0.5;
/** Issue 19: the default watch of hand edits costs at most this share of the floor's time (mirror with it on, minus off). */
const WATCH_OF_FLOOR = 0.05;
/** Runs of the mirror with the watch on and off per round, alternating; each way's least is compared. */
const WATCH_REPEATS = 3;

/*
 * The judged figure: the CPU time spent inside the watch's own calls
 * (TargetWatch's locked, between, evidence, settle and close: all it does
 * in a catch-up, its checkpoints and log reads included) during the runs
 * with it on. Unlike on minus off, it holds no run-to-run noise, but nor
 * would it hold a cost the watch caused in SQLite's own work (a checkpoint
 * a pin held back): the on-off difference, reported beside it, and the
 * traces in docs/projections.md are what say that. The wrappers add about
 * a µs per call, a few dozen calls per run.
 */
const watchOwnCpu = { us: 0, depth: 0 };
for (const m of ['locked', 'between', 'evidence', 'settle', 'close'] as const) {
  const proto = TargetWatch.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const orig = proto[m] as (...a: unknown[]) => unknown;
  proto[m] = function (this: unknown, ...a: unknown[]) {
    // A call made inside another (none today) is counted in the outer one.
    const outer = watchOwnCpu.depth++ === 0;
    const c0 = process.cpuUsage();
    try {
      return orig.apply(this, a);
    } finally {
      watchOwnCpu.depth--;
      if (outer) {
        const c = process.cpuUsage(c0);
        watchOwnCpu.us += c.user + c.system;
      }
    }
  };
}

const DDL = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)';
const COLS = ['id', 'name', 'n', 'r', 'b'] as const;

/** The source file the measures read: src.db (mixed events), then src-once.db (each key once). */
let SRC = 'src.db';

const scratch = makeScratch('sluice-bench-apply-');
const dir = scratch.dir;
const file = (name: string) => path.join(dir, name);
const log = (s: string) => process.stderr.write(`${s}\n`);

/* ---------------------------------------------------------------- data */

const rand = prng(20260401);
function blob(): Buffer {
  const b = Buffer.allocUnsafe(32);
  for (let i = 0; i < 32; i += 4) b.writeUInt32LE(Math.floor(rand() * 4294967296), i);
  return b;
}
/** Mostly text, sometimes NULL; n in 0..999 so that the map filter (n >= 250) keeps about 3/4 of the rows. */
function values(id: number, k: number): [string | null, bigint, number, Buffer] {
  return [rand() < 0.05 ? null : `name-${id}-${k}`, BigInt(Math.floor(rand() * 1000)), rand() * 1000, blob()];
}

function newFileDb(name: string): Db {
  const db = openDatabase(file(name), { create: true, role: 'bench', wal: true });
  db.pragma('synchronous = NORMAL');
  return db;
}

/** A plain t with `rows` rows: the baseline's copy source. */
function buildCopySource(rows: number): void {
  const db = newFileDb('copy-src.db');
  db.exec(DDL);
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= rows; i++) ins.run(BigInt(i), ...values(i, 0));
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

interface Mix {
  inserts: number;
  updates: number;
  keyChanges: number;
  deletes: number;
}

/** Writes `events` mixed changes to the captured t, 1,000 statements per transaction. */
function writeEvents(db: Db, events: number, live: number[], firstNewId: number): Mix {
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?)');
  const upd = db.prepare('UPDATE t SET name = ?, n = ?, r = ? WHERE id = ?');
  const updB = db.prepare('UPDATE t SET name = ?, n = ?, r = ?, b = ? WHERE id = ?');
  const rekey = db.prepare('UPDATE t SET id = ?, n = ? WHERE id = ?');
  const del = db.prepare('DELETE FROM t WHERE id = ?');
  const left = { ins: Math.round(events * 0.5), upd: Math.round(events * 0.35), del: 0 };
  left.del = events - left.ins - left.upd;
  const mix: Mix = { inserts: 0, updates: 0, keyChanges: 0, deletes: 0 };
  let nextId = firstNewId;
  let k = 1;
  const one = () => {
    const total = left.ins + left.upd + left.del;
    let x = rand() * total;
    let op: 'ins' | 'upd' | 'del' = x < left.ins ? 'ins' : (x -= left.ins) < left.upd ? 'upd' : 'del';
    if (op !== 'ins' && live.length === 0) op = 'ins';
    left[op]--;
    if (op === 'ins') {
      const id = nextId++;
      ins.run(BigInt(id), ...values(id, 0));
      live.push(id);
      mix.inserts++;
      return;
    }
    const idx = Math.floor(rand() * live.length);
    const id = live[idx] as number;
    if (op === 'del') {
      live[idx] = live[live.length - 1] as number;
      live.pop();
      del.run(BigInt(id));
      mix.deletes++;
      return;
    }
    mix.updates++;
    if (rand() < 0.01) {
      const to = nextId++;
      rekey.run(BigInt(to), BigInt(Math.floor(rand() * 1000)), BigInt(id));
      live[idx] = to;
      mix.keyChanges++;
      return;
    }
    const [name, n, r, b] = values(id, k++);
    if (rand() < 0.3) updB.run(name, n, r, b, BigInt(id));
    else upd.run(name, n, r, BigInt(id));
  };
  for (let done = 0; done < events;) {
    const chunk = Math.min(1000, events - done);
    db.transaction(() => {
      for (let i = 0; i < chunk; i++) one();
    })();
    done += chunk;
  }
  return mix;
}

/* --------------------------------------------------------- projections */

const MIRROR: ProjectionDefinition = { name: 't', source: 't', kind: 'mirror' };
const MAP: ProjectionDefinition = {
  name: 'tmap',
  source: 't',
  kind: 'map',
  columns: { id: 'id', label: 'name', n: 'n', label_upper: { expr: 'upper(name)', type: 'TEXT' }, b: 'b' },
  filter: 'n >= 250',
};
const FTS: ProjectionDefinition = { name: 'tfts', source: 't', kind: 'fts5', columns: ['name'], content: 'external' };

const bind = (row: Row) => COLS.map((c) => toBindable(row[c] ?? null));
/** A Kysely mirror of t: what a user would write as a custom projection. */
const customHandler: CustomHandler = {
  version: '1',
  async init(rows, { db }) {
    await db.schema
      .createTable('tcustom')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('name', 'text')
      .addColumn('n', 'integer')
      .addColumn('r', 'real')
      .addColumn('b', 'blob')
      .execute();
    let page: Record<string, unknown>[] = [];
    const flush = async () => {
      if (page.length > 0) await db.insertInto('tcustom').values(page).execute();
      page = [];
    };
    for (const row of rows) {
      const v = bind(row);
      page.push(Object.fromEntries(COLS.map((c, i) => [c, v[i]])));
      if (page.length === 500) await flush();
    }
    await flush();
  },
  async apply(e, { db }) {
    if (e.before !== null)
      await db
        .deleteFrom('tcustom')
        .where('id', '=', toBindable(e.before.id ?? null))
        .execute();
    if (e.after !== null) {
      const v = bind(e.after);
      await db
        .insertInto('tcustom')
        .values(Object.fromEntries(COLS.map((c, i) => [c, v[i]])))
        .execute();
    }
  },
};
const CUSTOM: ProjectionDefinition = { name: 'tcustom', source: 't', kind: 'custom', handler: customHandler };

const KINDS = { mirror: MIRROR, map: MAP, fts5: FTS, custom: CUSTOM } as const;
type Kind = keyof typeof KINDS;

/* -------------------------------------------------------------- checks */

/** Rows of `a` not in `b` plus rows of `b` not in `a`, by storage class and value. */
function diffCount(db: Db, a: string, b: string): number {
  const q = (x: string, y: string) => `SELECT count(*) FROM (SELECT * FROM (${x}) EXCEPT SELECT * FROM (${y}))`;
  return Number(db.prepare(q(a, b)).pluck().get()) + Number(db.prepare(q(b, a)).pluck().get());
}
const typed = (cols: readonly string[], from: string) => `SELECT ${cols.map((c) => `${c}, typeof(${c})`).join(', ')} FROM ${from}`;

function check(kind: Kind | 'naive', target: string): string | undefined {
  const db = openDatabase(file(SRC), { role: 'source' });
  try {
    db.prepare('ATTACH DATABASE ? AS tgt').run(target);
    let d: number;
    if (kind === 'mirror' || kind === 'naive') d = diffCount(db, typed(COLS, 'main.t'), typed(COLS, 'tgt.t'));
    else if (kind === 'map')
      d = diffCount(
        db,
        typed(['id', 'name', 'n', 'upper(name)', 'b'], 'main.t WHERE n >= 250'),
        typed(['id', 'label', 'n', 'label_upper', 'b'], 'tgt.tmap'),
      );
    else if (kind === 'custom') d = diffCount(db, typed(COLS, 'main.t'), typed(COLS, 'tgt.tcustom'));
    else {
      d = diffCount(db, typed(['id', 'name'], 'main.t'), typed(['_k0', 'name'], 'tgt.tfts_src'));
      // The index must answer like the source: a few names that were inserted, updated or deleted.
      for (const id of [1, Math.floor(BASE / 2) + 1, BASE + 7, BASE + Math.floor(EVENTS / 4)]) {
        const phrase = `"name-${id}"`;
        const hits = Number(db.prepare('SELECT count(*) FROM tgt.tfts WHERE tfts MATCH ?').pluck().get(phrase));
        const want = Number(db.prepare("SELECT count(*) FROM main.t WHERE name LIKE ? || '-%'").pluck().get(`name-${id}`));
        if (hits !== want) return `fts5 MATCH ${phrase} gives ${hits} rows, the source has ${want}`;
      }
    }
    return d === 0 ? undefined : `${d} rows differ from the source`;
  } finally {
    db.close();
  }
}

/* ----------------------------------------------------------- measures */

let targetCounter = 0;
/** A fresh copy of a pristine post-snapshot target (its cursor is on src.db, which stays in place). */
function freshTarget(pristine: string): string {
  const to = file(`run-${targetCounter++}-${path.basename(pristine)}`);
  fs.copyFileSync(pristine, to);
  return to;
}
function discard(p: string): void {
  for (const s of ['', '-wal', '-shm']) fs.rmSync(p + s, { force: true });
}

/** Baseline: raw INSERT … SELECT of EVENTS rows between attached databases, one transaction. */
function baselineOnce(): Timed {
  const to = file(`run-${targetCounter++}-copy.db`);
  const fresh = newFileDbAt(to);
  fresh.exec(DDL);
  fresh.close();
  const db = openDatabase(file('copy-src.db'), { role: 'source' });
  db.pragma('temp_store = MEMORY');
  db.prepare('ATTACH DATABASE ? AS tgt').run(to);
  const stop = clock();
  db.exec('BEGIN');
  const n = db.prepare('INSERT INTO tgt.t SELECT * FROM main.t').run().changes;
  db.exec('COMMIT');
  const t = stop();
  db.close();
  discard(to);
  if (n !== EVENTS) throw new Error(`baseline copied ${n} rows, expected ${EVENTS}`);
  return timed(n, t, n);
}
/**
 * Context: a raw INSERT … SELECT of the batch's journal rows (the same
 * changes as captured: seq, op, ts and both images) into an empty table of
 * the journal's shape, one transaction, as rows/s.
 */
function journalCopyOnce(fromSeq: number, toSeq: number): Timed {
  const to = file(`run-${targetCounter++}-jcopy.db`);
  newFileDbAt(to).close();
  const db = openDatabase(file(SRC), { role: 'source' });
  db.pragma('temp_store = MEMORY');
  db.prepare('ATTACH DATABASE ? AS tgt').run(to);
  db.exec('CREATE TABLE tgt.j AS SELECT * FROM main._sluice_journal WHERE 0');
  const stop = clock();
  db.exec('BEGIN');
  const n = db.prepare(`INSERT INTO tgt.j SELECT * FROM main._sluice_journal WHERE seq > ${fromSeq} AND seq <= ${toSeq}`).run().changes;
  db.exec('COMMIT');
  const t = stop();
  db.close();
  discard(to);
  return timed(n, t, n);
}

/**
 * Context: the read floor. One pass over the batch's journal rows that reads
 * every column once (max() of each), nothing written, on a connection set
 * up like the applier's (the source memory-mapped), as rows/s. Any applier
 * reads at least this; with the write floor it bounds what any applier can
 * reach.
 */
function journalReadOnce(fromSeq: number, toSeq: number): Timed {
  const db = openDatabase(file(SRC), { role: 'source' });
  if (process.platform !== 'win32') db.pragma('mmap_size = 268435456');
  const cols = db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('_sluice_journal') as string[];
  const stmt = db.prepare(journalReadFloorSql(cols)).raw();
  const stop = clock();
  const n = Number((stmt.get(fromSeq, toSeq) as unknown[])[0]);
  const t = stop();
  db.close();
  return timed(n, t, n);
}

function newFileDbAt(p: string): Db {
  return openDatabase(p, { create: true, role: 'bench', wal: true });
}

interface Timed {
  /** Events (rows for the baseline) per second of wall time, and per second of this process's CPU time. */
  readonly perSec: number;
  readonly perCpuSec: number;
  readonly ms: number;
  readonly cpuMs: number;
  readonly applied: number;
}

/** Wall and CPU time (user + system of this process: SQLite runs on this thread) since `start`. */
function clock(): () => { ms: number; cpuMs: number } {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  return () => {
    const c = process.cpuUsage(c0);
    return { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 };
  };
}
/** The least time of runs (the least disturbed by other load). */
const least = (xs: readonly Timed[], t: 'ms' | 'cpuMs'): number => Math.min(...xs.map((x) => x[t]));
const timed = (n: number, t: { ms: number; cpuMs: number }, applied: number): Timed => ({
  perSec: (n / t.ms) * 1000,
  perCpuSec: (n / t.cpuMs) * 1000,
  ms: t.ms,
  cpuMs: t.cpuMs,
  applied,
});

async function syncOnce(
  kind: Kind,
  pristine: string,
  verify: boolean,
  batchSize = BATCH,
  options: { readonly watchTarget?: boolean } = {},
): Promise<Timed> {
  const target = freshTarget(pristine);
  const s = await Syncer.open(file(SRC), target, {
    projections: [KINDS[kind]],
    ...(batchSize === undefined ? {} : { batchSize }),
    ...options,
  });
  let report: SyncReport;
  const stop = clock();
  try {
    report = await s.runOnce();
  } finally {
    s.close();
  }
  const t = stop();
  const p = report.projections[0];
  if (p === undefined || p.state !== 'active' || p.rebuilt !== undefined || p.snapshotRows !== undefined) {
    throw new Error(`${kind}: expected an incremental catch-up, got ${JSON.stringify(p)}`);
  }
  if (verify) {
    const problem = check(kind, target);
    if (problem !== undefined) throw new Error(`${kind}: ${problem}`);
  }
  discard(target);
  // Throughput is over the source events applied, whatever the projection counts as "applied".
  return timed(appliedEvents(kind), t, p.applied);
}
const appliedEvents = (kind: Kind) => (kind === 'fts5' || kind === 'custom' ? SLOW_EVENTS : EVENTS);

/**
 * The naive applier, hand-written over the raw journal rows: per batch, one
 * target transaction and one read of the batch's journal rows; per event,
 * SELECT the target row and compare it with the before-image (storage class
 * and value, as JS types: bigint, number, string, Buffer), then DELETE and/or
 * upsert (a key change deletes the old key).
 */
function naiveOnce(pristine: string, fromSeq: number, toSeq: number, verify: boolean): Timed {
  const target = freshTarget(pristine);
  const db = openDatabase(file(SRC), { role: 'source' });
  db.pragma('temp_store = MEMORY');
  db.prepare('ATTACH DATABASE ? AS tgt').run(target);
  const tid = Number(db.prepare("SELECT tid FROM main._sluice_tables WHERE name = 't'").pluck().get());
  const read = db
    .prepare(
      `SELECT seq, op, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 FROM main._sluice_journal WHERE tid = ? AND seq > ? AND seq <= ? ORDER BY seq`,
    )
    .raw();
  const get = db.prepare('SELECT id, name, n, r, b FROM tgt.t WHERE id = ?').raw();
  const upsert = db.prepare(
    'INSERT INTO tgt.t VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, n = excluded.n, r = excluded.r, b = excluded.b',
  );
  const del = db.prepare('DELETE FROM tgt.t WHERE id = ?');
  const cursor = db.prepare('UPDATE tgt.naive_cursor SET seq = ?');
  const same = (a: unknown, b: unknown) => a === b || (Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b));
  const stop = clock();
  let applied = 0;
  try {
    for (let lo = fromSeq; lo < toSeq;) {
      const hi = Math.min(lo + NAIVE_BATCH, toSeq);
      db.exec('BEGIN');
      for (const row of read.all(tid, lo, hi) as unknown[][]) {
        const op = Number(row[1]);
        const first = row.slice(2, 7);
        const before = op === 1 ? null : first;
        const after = op === 1 ? first : op === 2 ? row.slice(7, 12) : null;
        const key = (before ?? after)?.[0];
        const got = get.get(key) as unknown[] | undefined;
        const ok = before === null ? got === undefined : got !== undefined && got.every((v, i) => same(v, before[i]));
        if (!ok) throw new Error(`naive: target diverged at seq ${String(row[0])}`);
        if (before !== null && (after === null || !same(before[0], after[0]))) del.run(before[0]);
        if (after !== null) {
          if (before === null || !same(before[0], after[0])) {
            // A new key must be absent (an uncaptured REPLACE otherwise).
            if (before !== null && get.get(after[0]) !== undefined)
              throw new Error(`naive: key ${String(after[0])} present at seq ${String(row[0])}`);
          }
          upsert.run(...after);
        }
        applied++;
      }
      cursor.run(hi);
      db.exec('COMMIT');
      lo = hi;
    }
  } finally {
    if (db.inTransaction) db.exec('ROLLBACK');
    db.close();
  }
  const t = stop();
  if (verify) {
    const problem = check('naive', target);
    if (problem !== undefined) throw new Error(`naive: ${problem}`);
  }
  discard(target);
  return timed(applied, t, applied);
}

/**
 * The write floor: the final rows of every key the events touch, written
 * with INSERT OR REPLACE from the source table, and the keys they removed
 * deleted, in one transaction. Which keys those are is computed first and
 * not timed. No before-image is read or compared.
 */
function floorOnce(pristine: string, fromSeq: number, toSeq: number, verify: boolean): Timed {
  const target = freshTarget(pristine);
  const db = openDatabase(file(SRC), { role: 'source' });
  db.pragma('temp_store = MEMORY');
  db.prepare('ATTACH DATABASE ? AS tgt').run(target);
  const tid = Number(db.prepare("SELECT tid FROM main._sluice_tables WHERE name = 't'").pluck().get());
  const range = `tid = ${tid} AND seq > ${fromSeq} AND seq <= ${toSeq}`;
  for (const sql of writeFloorKeysSql(range)) db.exec(sql);
  const stop = clock();
  db.exec('BEGIN');
  for (const sql of WRITE_FLOOR_SQL) db.exec(sql);
  db.exec('COMMIT');
  const t = stop();
  db.close();
  if (verify) {
    const problem = check('naive', target);
    if (problem !== undefined) throw new Error(`floor: ${problem}`);
  }
  discard(target);
  return timed(toSeq - fromSeq, t, toSeq - fromSeq);
}

/* ------------------------------------------------- each key once, and the mirror alone */

/**
 * `events` changes to the captured t that touch each key once (the mix of
 * writeEvents: 50% inserts of new keys, 35% updates of which 1% change the
 * key to a new one, 15% deletes), the updated and deleted keys drawn without
 * replacement from the live ones; when those run out, inserts instead.
 * Committed 1,000 statements per transaction.
 */
function writeOnceEvents(db: Db, events: number, live: readonly number[], firstNewId: number): Mix {
  const pool = [...live];
  for (let i = pool.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [pool[i], pool[j]] = [pool[j] as number, pool[i] as number];
  }
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?)');
  const upd = db.prepare('UPDATE t SET name = ?, n = ?, r = ? WHERE id = ?');
  const updB = db.prepare('UPDATE t SET name = ?, n = ?, r = ?, b = ? WHERE id = ?');
  const rekey = db.prepare('UPDATE t SET id = ?, n = ? WHERE id = ?');
  const del = db.prepare('DELETE FROM t WHERE id = ?');
  const mix: Mix = { inserts: 0, updates: 0, keyChanges: 0, deletes: 0 };
  let nextId = firstNewId;
  const one = () => {
    const x = rand();
    const id = x < 0.5 ? undefined : pool.pop();
    if (id === undefined) {
      const to = nextId++;
      ins.run(BigInt(to), ...values(to, 0));
      mix.inserts++;
    } else if (x >= 0.85) {
      del.run(BigInt(id));
      mix.deletes++;
    } else if (rand() < 0.01) {
      rekey.run(BigInt(nextId++), BigInt(Math.floor(rand() * 1000)), BigInt(id));
      mix.updates++;
      mix.keyChanges++;
    } else {
      const [name, n, r, b] = values(id, 1);
      if (rand() < 0.3) updB.run(name, n, r, b, BigInt(id));
      else upd.run(name, n, r, BigInt(id));
      mix.updates++;
    }
  };
  for (let done = 0; done < events;) {
    const chunk = Math.min(1000, events - done);
    db.transaction(() => {
      for (let i = 0; i < chunk; i++) one();
    })();
    done += chunk;
  }
  return mix;
}

/** A raw copy of the source's t at this point plus a cursor row: the naive loop's and the floor's target. */
function rawCopyTarget(name: string): string {
  const p = file(name);
  newFileDbAt(p).close();
  const db = openDatabase(file(SRC), { role: 'source' });
  db.prepare('ATTACH DATABASE ? AS tgt').run(p);
  db.exec(
    `BEGIN; ${DDL.replace('TABLE t', 'TABLE tgt.t')}; INSERT INTO tgt.t SELECT * FROM main.t; CREATE TABLE tgt.naive_cursor (seq INTEGER); INSERT INTO tgt.naive_cursor VALUES (0); COMMIT`,
  );
  db.close();
  checkpoint(p);
  return p;
}

interface MirrorScenario {
  readonly source: string;
  readonly mirror: string;
  readonly raw: string;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly mix: Mix;
}

/** A source of its own (`--base` rows, capture, a mirror snapshot and a raw copy, then `--events` changes by `write`). */
async function buildScenario(name: string, write: (db: Db, live: number[]) => Mix): Promise<MirrorScenario> {
  SRC = `src-${name}.db`;
  const src = newFileDb(SRC);
  src.exec(DDL);
  const live: number[] = [];
  const ins = src.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?)');
  src.transaction(() => {
    for (let i = 1; i <= BASE; i++) {
      ins.run(BigInt(i), ...values(i, 0));
      live.push(i);
    }
  })();
  enable(src, ['t']);
  src.close();
  const mirror = file(`pristine-${name}-mirror.db`);
  const s = await Syncer.open(file(SRC), mirror, { projections: [MIRROR] });
  const r = await s.runOnce();
  s.close();
  if (r.projections[0]?.snapshotRows === undefined) throw new Error(`${name}: snapshot gave ${JSON.stringify(r.projections[0])}`);
  checkpoint(mirror);
  const raw = rawCopyTarget(`pristine-${name}-raw.db`);
  const db = openDatabase(file(SRC), { role: 'source' });
  db.pragma('synchronous = NORMAL');
  const fromSeq = readSourceView(db).hw;
  const mix = write(db, live);
  const toSeq = readSourceView(db).hw;
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  if (toSeq - fromSeq !== EVENTS) throw new Error(`${name}: expected ${EVENTS} journal events, got ${toSeq - fromSeq}`);
  return { source: SRC, mirror, raw, fromSeq, toSeq, mix };
}

type MirrorRun = 'mirror' | 'grouped' | 'floor' | 'jread';
type MirrorRuns = Record<MirrorRun, Timed[]>;

/** The mirror catch-up with the plain path off (relational/table.ts plainPath): every batch grouped by key, as before it. */
async function syncGrouped(pristine: string, verify: boolean): Promise<Timed> {
  plainPath.on = false;
  try {
    return await syncOnce('mirror', pristine, verify);
  } finally {
    plainPath.on = true;
  }
}

/** Rounds of the mirror (plain path on and off), the write floor and the read floor over one scenario, in an order that rotates. */
async function measureMirror(sc: MirrorScenario, label: string): Promise<MirrorRuns> {
  const KS: readonly MirrorRun[] = ['mirror', 'grouped', 'floor', 'jread'];
  const runs: MirrorRuns = { mirror: [], grouped: [], floor: [], jread: [] };
  const was = SRC;
  SRC = sc.source;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const verify = round === 0;
      for (const k of KS.map((_, i) => KS[(i + round) % KS.length] as MirrorRun)) {
        if (k === 'mirror') runs.mirror.push(await syncOnce('mirror', sc.mirror, verify));
        else if (k === 'grouped') runs.grouped.push(await syncGrouped(sc.mirror, verify));
        else if (k === 'floor') runs.floor.push(floorOnce(sc.raw, sc.fromSeq, sc.toSeq, verify));
        else runs.jread.push(journalReadOnce(sc.fromSeq, sc.toSeq));
      }
      const last = (k: MirrorRun) => runs[k][runs[k].length - 1] as Timed;
      const fl = floorSpeed(last('floor'), last('jread'));
      log(
        `${label} round ${round + 1}/${ROUNDS}: floor ${fmtRate(fl.perSec)} (cpu ${fmtRate(fl.perCpuSec)}); ${(['mirror', 'grouped'] as const).map((k) => `${k} ${fmtRate(last(k).perSec)} (${fmtRatio(last(k).perSec / fl.perSec)}, cpu ${fmtRatio(last(k).perCpuSec / fl.perCpuSec)})`).join(', ')}`,
      );
    }
  } finally {
    SRC = was;
  }
  return runs;
}

/** The floor of one round: the read floor's time plus the write floor's, as events/s (wall and CPU). */
function floorSpeed(floor: Timed, jread: Timed): { perSec: number; perCpuSec: number } {
  return { perSec: 1 / (1 / floor.perSec + 1 / jread.perSec), perCpuSec: 1 / (1 / floor.perCpuSec + 1 / jread.perCpuSec) };
}

interface VsFloor {
  /** Median over rounds of the variant's events/s over that round's floor, wall and CPU. */
  readonly wall: number;
  readonly cpu: number;
  /** The floor's median events/s (wall). */
  readonly floorPerSec: number;
}

function vsFloor(variant: readonly Timed[], floor: readonly Timed[], jread: readonly Timed[]): VsFloor {
  const fl = variant.map((_, i) => floorSpeed(floor[i] as Timed, jread[i] as Timed));
  return {
    wall: median(variant.map((v, i) => v.perSec / (fl[i] as { perSec: number }).perSec)),
    cpu: median(variant.map((v, i) => v.perCpuSec / (fl[i] as { perCpuSec: number }).perCpuSec)),
    floorPerSec: median(fl.map((f) => f.perSec)),
  };
}

/** DESIGN.md's two mirror apply figures: each key once (>= 0.8 of the floor) and mixed (>= 0.5). */
function mirrorFigure(which: 'once' | 'mixed', v: VsFloor, grouped: VsFloor): Figure {
  const once = which === 'once';
  return {
    id: once ? 'apply.mirror.once-per-key.vs-floor' : 'apply.mirror.vs-floor',
    target: once ? 'mirror apply, batches that touch each key once' : 'mirror apply, mixed batches with repeated keys',
    what: `mirror apply of ${EVENTS} ${once ? 'events touching each key once' : 'mixed events (keys changed several times)'} over ${BASE} rows, over the floor (one read of the batch's journal rows plus the target writes alone), median of ${ROUNDS} rounds (every batch grouped by key, as before the plain path: ${fmtRatio(grouped.wall)}, cpu ${fmtRatio(grouped.cpu)})`,
    value: v.wall,
    unit: 'x',
    op: '>=',
    limit: once ? ONCE_FLOOR_RATIO : MIXED_FLOOR_RATIO,
    floor: {
      id: once ? 'apply.floor.once-per-key' : 'apply.floor.mixed',
      what: `bench/apply's floor for ${once ? 'events touching each key once' : 'mixed events'}: every column of the batch's journal rows read once, plus the target writes alone (keys worked out beforehand, no check)`,
      perSecond: v.floorPerSec,
      unit: 'events/s',
    },
    cpu: v.cpu,
  };
}

/** The once-per-key scenario, built and measured (its source is src-once.db; src.db stays as it is). */
async function onceScenario(): Promise<{ sc: MirrorScenario; runs: MirrorRuns }> {
  const was = SRC;
  let sc: MirrorScenario;
  try {
    sc = await buildScenario('once', (db, live) => writeOnceEvents(db, EVENTS, live, BASE + 1));
  } finally {
    SRC = was;
  }
  log(`each key once: ${JSON.stringify(sc.mix)}, seq ${sc.fromSeq}..${sc.toSeq}`);
  return { sc, runs: await measureMirror(sc, 'once per key') };
}

function mirrorRows(label: string, runs: MirrorRuns, limit: number): string[][] {
  const row = (k: 'mirror' | 'grouped', what: string, judged: boolean) => {
    const v = vsFloor(runs[k], runs.floor, runs.jread);
    return [
      what,
      fmtRate(median(runs[k].map((t) => t.perSec))),
      fmtRatio(v.wall),
      fmtRatio(v.cpu),
      judged ? `>= ${limit}x` : '',
      judged ? (v.wall >= limit ? 'PASS' : 'MISS') : '',
    ];
  };
  const fl = vsFloor(runs.floor, runs.floor, runs.jread);
  return [
    [
      `floor (${label}): journal read + target writes alone (the next two rows' ratios are over it)`,
      fmtRate(fl.floorPerSec),
      '1.00x',
      '1.00x',
      '',
      '',
    ],
    row('mirror', `mirror apply (${label})`, true),
    row('grouped', `mirror apply, every batch grouped by key (${label}, context)`, false),
  ];
}

/** `--only mirror`: the mirror against its floor, mixed and once per key (bench/out/apply-mirror.json). */
async function mainMirrorOnly(): Promise<void> {
  log(`bench/apply --only mirror: ${EVENTS} events over ${BASE} base rows, ${ROUNDS} rounds, in ${dir}`);
  const mixedSc = await buildScenario('mixed', (db, live) => writeEvents(db, EVENTS, live, BASE + 1));
  SRC = 'src.db';
  log(`mixed: ${JSON.stringify(mixedSc.mix)}, seq ${mixedSc.fromSeq}..${mixedSc.toSeq}`);
  const mixed = await measureMirror(mixedSc, 'mixed');
  const once = await onceScenario();
  process.stdout.write(
    `\n${renderTable(['path', 'throughput', 'vs floor', 'cpu', 'target', ''], [...mirrorRows('mixed', mixed, MIXED_FLOOR_RATIO), ...mirrorRows('each key once', once.runs, ONCE_FLOOR_RATIO)])}\n` +
      `\nvs floor: median over ${ROUNDS} rounds of events/s over that round's floor (wall; cpu: this process's CPU time). uptime: ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}\n`,
  );
  const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(
    path.join(outDir, 'apply-mirror.json'),
    `${JSON.stringify({ bench: 'apply --only mirror', when: new Date().toISOString(), versions: versions(), settings: { events: EVENTS, baseRows: BASE, rounds: ROUNDS, loadavg: os.loadavg() }, mixed: { mix: mixedSc.mix, runs: mixed }, once: { mix: once.sc.mix, runs: once.runs } }, null, 2)}\n`,
  );
  emitFigures('apply', [
    mirrorFigure('mixed', vsFloor(mixed.mirror, mixed.floor, mixed.jread), vsFloor(mixed.grouped, mixed.floor, mixed.jread)),
    mirrorFigure(
      'once',
      vsFloor(once.runs.mirror, once.runs.floor, once.runs.jread),
      vsFloor(once.runs.grouped, once.runs.floor, once.runs.jread),
    ),
  ]);
}

/* ----------------------------------------------------------------- run */

function versions(): { sqlite: string; betterSqlite3: string; node: string } {
  const require = createRequire(import.meta.url);
  const pkg = require('better-sqlite3/package.json') as { version: string };
  const db = openDatabase(':memory:');
  const v = db.prepare('SELECT sqlite_version()').pluck().get() as string;
  db.close();
  return { sqlite: v, betterSqlite3: pkg.version, node: process.version };
}

async function main(): Promise<void> {
  log(`bench/apply: ${EVENTS} events over ${BASE} base rows, ${ROUNDS} rounds, batch ${BATCH ?? 'default'}, in ${dir}`);
  const tSetup = performance.now();
  buildCopySource(EVENTS);

  // The source: base rows, then capture, then snapshots of every projection, then the events.
  const src = newFileDb(SRC);
  src.exec(DDL);
  const live: number[] = [];
  const ins = src.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?)');
  src.transaction(() => {
    for (let i = 1; i <= BASE; i++) {
      ins.run(BigInt(i), ...values(i, 0));
      live.push(i);
    }
  })();
  enable(src, ['t']);
  src.close();

  const pristine: Record<Kind | 'naive', string> = { mirror: '', map: '', fts5: '', custom: '', naive: '' };
  for (const kind of Object.keys(KINDS) as Kind[]) {
    const p = file(`pristine-${kind}.db`);
    const s = await Syncer.open(file(SRC), p, { projections: [KINDS[kind]] });
    const r = await s.runOnce();
    s.close();
    if (r.projections[0]?.snapshotRows === undefined || r.projections[0].state !== 'active')
      throw new Error(`${kind}: snapshot gave ${JSON.stringify(r.projections[0])}`);
    checkpoint(p);
    pristine[kind] = p;
  }
  // The mirror's target with the guard triggers of `sluice protect` (opt-in).
  const protectedMirror = file('pristine-mirror-protected.db');
  fs.copyFileSync(pristine.mirror, protectedMirror);
  protect(protectedMirror, true);
  checkpoint(protectedMirror);
  // The naive loop's target: a raw copy of t at the same point, plus a cursor row.
  {
    const p = file('pristine-naive.db');
    newFileDbAt(p).close();
    const db = openDatabase(file(SRC), { role: 'source' });
    db.prepare('ATTACH DATABASE ? AS tgt').run(p);
    db.exec(
      `BEGIN; ${DDL.replace('TABLE t', 'TABLE tgt.t')}; INSERT INTO tgt.t SELECT * FROM main.t; CREATE TABLE tgt.naive_cursor (seq INTEGER); INSERT INTO tgt.naive_cursor VALUES (0); COMMIT`,
    );
    db.close();
    checkpoint(p);
    pristine.naive = p;
  }

  const db = openDatabase(file(SRC), { role: 'source' });
  db.pragma('synchronous = NORMAL');
  const fromSeq = readSourceView(db).hw;
  const mix = writeEvents(db, EVENTS, live, BASE + 1);
  const toSeq = readSourceView(db).hw;
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  if (toSeq - fromSeq !== EVENTS) throw new Error(`expected ${EVENTS} journal events, got ${toSeq - fromSeq}`);
  const setupMs = performance.now() - tSetup;
  log(`setup ${(setupMs / 1000).toFixed(1)} s: ${JSON.stringify(mix)}, seq ${fromSeq}..${toSeq}`);

  // Paired rounds: a baseline, then the variants (order rotating per round), then a baseline again.
  type Paired = 'mirror' | 'grouped' | 'map' | 'naive' | 'mirror1' | 'floor' | 'jcopy' | 'jread' | 'unwatched' | 'protected';
  const PAIRED: readonly Paired[] = ['mirror', 'grouped', 'map', 'naive', 'mirror1', 'floor', 'jcopy', 'jread', 'unwatched', 'protected'];
  const runs: Record<Paired | 'baseline', Timed[]> = {
    baseline: [],
    mirror: [],
    grouped: [],
    map: [],
    naive: [],
    mirror1: [],
    floor: [],
    jcopy: [],
    jread: [],
    unwatched: [],
    protected: [],
  };
  const watchPairs: { readonly on: readonly Timed[]; readonly off: readonly Timed[]; readonly ownCpuMs: readonly number[] }[] = [];
  const ratios = Object.fromEntries(PAIRED.map((k) => [k, { wall: [] as number[], cpu: [] as number[] }])) as Record<
    Paired,
    { wall: number[]; cpu: number[] }
  >;
  for (let round = 0; round < ROUNDS; round++) {
    const verify = round === 0;
    const rotated = PAIRED.map((_, i) => PAIRED[(i + round) % PAIRED.length] as Paired);
    const base1 = baselineOnce();
    const got: Partial<Record<Paired, Timed>> = {};
    for (const k of rotated) {
      if (k === 'naive') got[k] = naiveOnce(pristine.naive, fromSeq, toSeq, verify);
      else if (k === 'floor') got[k] = floorOnce(pristine.naive, fromSeq, toSeq, verify);
      else if (k === 'jcopy') got[k] = journalCopyOnce(fromSeq, toSeq);
      else if (k === 'jread') got[k] = journalReadOnce(fromSeq, toSeq);
      // Context: the same mirror catch-up as ONE target transaction (what the per-batch commits cost).
      else if (k === 'mirror1') got[k] = await syncOnce('mirror', pristine.mirror, verify, EVENTS);
      // The same mirror catch-up with the watch of hand edits off, and with the guard triggers of `sluice protect`.
      else if (k === 'unwatched') got[k] = await syncOnce('mirror', pristine.mirror, verify, BATCH, { watchTarget: false });
      else if (k === 'protected') got[k] = await syncOnce('mirror', protectedMirror, verify);
      // The same mirror catch-up with every batch grouped by key (the plain path off).
      else if (k === 'grouped') got[k] = await syncGrouped(pristine.mirror, verify);
      else got[k] = await syncOnce(k, pristine[k], verify);
    }
    // The watch's cost is a few µs per target transaction, far below one run's noise on a shared machine: measured
    // as the least of WATCH_REPEATS runs with it on and off, alternating, per round.
    const pair = { on: [] as Timed[], off: [] as Timed[], ownCpuMs: [] as number[] };
    for (let r = 0; r < WATCH_REPEATS; r++) {
      for (const on of r % 2 === 0 ? [true, false] : [false, true]) {
        watchOwnCpu.us = 0;
        pair[on ? 'on' : 'off'].push(await syncOnce('mirror', pristine.mirror, false, BATCH, { watchTarget: on }));
        if (on) pair.ownCpuMs.push(watchOwnCpu.us / 1000);
      }
    }
    watchPairs.push(pair);
    const base2 = baselineOnce();
    runs.baseline.push(base1, base2);
    const baseWall = (base1.perSec + base2.perSec) / 2;
    const baseCpu = (base1.perCpuSec + base2.perCpuSec) / 2;
    for (const k of PAIRED) {
      const t = got[k] as Timed;
      runs[k].push(t);
      ratios[k].wall.push(t.perSec / baseWall);
      ratios[k].cpu.push(t.perCpuSec / baseCpu);
    }
    log(
      `round ${round + 1}/${ROUNDS}: baseline ${fmtRate(baseWall)}; ${PAIRED.map((k) => `${k} ${fmtRate((got[k] as Timed).perSec)} (${fmtRatio((got[k] as Timed).perSec / baseWall)}, cpu ${fmtRatio((got[k] as Timed).perCpuSec / baseCpu)})`).join(', ')}`,
    );
  }

  // Context: `sluice verify` of a caught-up mirror target (every row checksummed on both sides).
  const verifyTimed = await verifyOnce(pristine.mirror);
  log(`verify: ${fmtRate(verifyTimed.perSec)} rows`);

  // The per-event paths, once each, over the first SLOW_EVENTS events.
  const slow: Partial<Record<'fts5' | 'custom', Timed>> = {};
  if (SLOW_EVENTS > 0) {
    for (const k of ['fts5', 'custom'] as const) {
      const t = await syncSlow(k, pristine[k], fromSeq, fromSeq + SLOW_EVENTS);
      slow[k] = t;
      log(`${k}: ${fmtRate(t.perSec)} over ${SLOW_EVENTS} events`);
    }
  }

  const baseline = median(runs.baseline.map((t) => t.perSec));
  const baselineCpu = median(runs.baseline.map((t) => t.perCpuSec));
  const rate = (k: Paired) => median(runs[k].map((t) => t.perSec));
  const ratio = (k: Paired) => median(ratios[k].wall);
  const cpuRatio = (k: Paired) => median(ratios[k].cpu);
  const verdict = (r: number) => (r >= TARGET_RATIO ? 'PASS' : 'MISS');
  const batchLabel = `batch ${BATCH ?? `${DEFAULT_BATCH.setBased} (default)`}`;
  const row = (what: string, perSec: number, r: number, cpu: number, target: string, v: string) => [
    what,
    fmtRate(perSec),
    fmtRatio(r),
    fmtRatio(cpu),
    target,
    v,
  ];
  const skip = await skipScenario();
  const once = await onceScenario();
  const table = renderTable(
    ['path', 'throughput', 'vs baseline', 'cpu ratio', 'target', ''],
    [
      row(`baseline: INSERT … SELECT of ${EVENTS} rows (rows/s)`, baseline, 1, 1, '', ''),
      row(
        `mirror apply, ${EVENTS} events, ${batchLabel}`,
        rate('mirror'),
        ratio('mirror'),
        cpuRatio('mirror'),
        `>= ${TARGET_RATIO}x`,
        verdict(ratio('mirror')),
      ),
      row(
        `map apply (filter + computed column), ${batchLabel}`,
        rate('map'),
        ratio('map'),
        cpuRatio('map'),
        `>= ${TARGET_RATIO}x`,
        verdict(ratio('map')),
      ),
      row(`naive JS loop, ${batchLabel} (context)`, rate('naive'), ratio('naive'), cpuRatio('naive'), '~0.2x', ''),
      row(`mirror apply as one transaction (context)`, rate('mirror1'), ratio('mirror1'), cpuRatio('mirror1'), '', ''),
      row(`floor: the target writes alone, no checks (context)`, rate('floor'), ratio('floor'), cpuRatio('floor'), '', ''),
      row(`mirror apply with the hand-edit watch off (context)`, rate('unwatched'), ratio('unwatched'), cpuRatio('unwatched'), '', ''),
      row(
        `mirror apply into a protected target (sluice protect's guard triggers, opt-in)`,
        rate('protected'),
        ratio('protected'),
        cpuRatio('protected'),
        'report',
        '',
      ),
      row(
        `verify of the caught-up mirror (rows/s, context, 1 run)`,
        verifyTimed.perSec,
        verifyTimed.perSec / baseline,
        verifyTimed.perCpuSec / baselineCpu,
        '',
        '',
      ),
      row(`INSERT … SELECT of the ${EVENTS} journal rows (rows/s, context)`, rate('jcopy'), ratio('jcopy'), cpuRatio('jcopy'), '', ''),
      row(
        `read floor: every column of the ${EVENTS} journal rows read once (context)`,
        rate('jread'),
        ratio('jread'),
        cpuRatio('jread'),
        '',
        '',
      ),
      ...mirrorRows('mixed', { mirror: runs.mirror, grouped: runs.grouped, floor: runs.floor, jread: runs.jread }, MIXED_FLOOR_RATIO),
      ...mirrorRows('each key once', once.runs, ONCE_FLOOR_RATIO),
      skipRow(skip),
      ...(['fts5', 'custom'] as const).flatMap((k) => {
        const t = slow[k];
        return t === undefined
          ? []
          : [row(`${k} apply, ${SLOW_EVENTS} events (1 run)`, t.perSec, t.perSec / baseline, t.perCpuSec / baselineCpu, 'report', '')];
      }),
    ],
  );
  // DESIGN.md calibrates its 0.5x as 2.5x the naive loop ("a naive JS loop measures about 0.2x").
  const vsNaive = median(runs.mirror.map((t, i) => t.perSec / (runs.naive[i] as Timed).perSec));
  const vsJournalCopy = median(runs.mirror.map((t, i) => t.perSec / (runs.jcopy[i] as Timed).perSec));
  // An applier reads every event and writes the net rows: its time is at
  // least the read floor's plus the write floor's, before any check.
  const bound = median(ratios.floor.wall.map((w, i) => 1 / (1 / w + 1 / (ratios.jread.wall[i] as number))));
  // What the default watch of hand edits costs, as a share of the floor's time in the same round (wall and CPU).
  const watchShare = (t: 'ms' | 'cpuMs') =>
    median(watchPairs.map((w, i) => (least(w.on, t) - least(w.off, t)) / (runs.floor[i] as Timed)[t]));
  // Per round, as judged (CPU): its spread shows how much of it one run's noise is.
  const watchShareRounds = watchPairs.map((w, i) => (least(w.on, 'cpuMs') - least(w.off, 'cpuMs')) / (runs.floor[i] as Timed).cpuMs);
  // Context: the watch's own calls in the runs with it on (median per round), over the floor's CPU time.
  const watchOwnMs = median(watchPairs.map((w) => median([...w.ownCpuMs])));
  const watchOwnShare = median(watchPairs.map((w, i) => median([...w.ownCpuMs]) / (runs.floor[i] as Timed).cpuMs));
  const protectOverWatched = (t: 'ms' | 'cpuMs') => median(runs.protected.map((m, i) => m[t] / (runs.mirror[i] as Timed)[t]));
  process.stdout.write(
    `\n${table}\n\nmirror vs the naive loop: ${fmtRatio(vsNaive)} (DESIGN.md's 0.5x against its naive ~0.2x is 2.5x); mirror vs the journal-row copy: ${fmtRatio(vsJournalCopy)}.\n` +
      `read floor + write floor, with no check at all: at most ${fmtRatio(bound)} for any applier here; what the mirror adds on top of them is the grouping by key and the before-image checks.\n` +
      `hand-edit watch (default on; the least of ${WATCH_REPEATS} alternating runs each way per round): mirror time with it minus without it is ${pct(watchShare('ms'))} of the floor's time (cpu ${pct(watchShare('cpuMs'))}; target <= ${pct(WATCH_OF_FLOOR)}; per round, cpu: ${watchShareRounds.map(pct).join(', ')}); ` +
      `the watch's own calls in the runs with it on (judged): ${watchOwnMs.toFixed(2)} ms of CPU per catch-up, ${pct(watchOwnShare)} of the floor's CPU time; ` +
      `a protected target (opt-in guard triggers) takes ${fmtRatio(protectOverWatched('ms'))} the mirror's time (cpu ${fmtRatio(protectOverWatched('cpuMs'))}).\n` +
      `\nthroughput: events/s of wall time (rows/s for the baseline). vs baseline: median over ${ROUNDS} rounds of the ratio to that round's baselines ` +
      `(judged against the target). cpu ratio: the same with this process's CPU time instead of wall time (less sensitive to other load on the machine).\n`,
  );

  const summary = (k: Paired) => ({ eventsPerSec: rate(k), ratio: ratio(k), cpuRatio: cpuRatio(k), transitions: runs[k][0]?.applied });
  const out = {
    bench: 'apply',
    when: new Date().toISOString(),
    versions: versions(),
    settings: {
      events: EVENTS,
      baseRows: BASE,
      rounds: ROUNDS,
      batchSize: BATCH ?? `Syncer default (${DEFAULT_BATCH.setBased} for mirror, map and fts5, ${DEFAULT_BATCH.perEvent} for custom)`,
      slowEvents: SLOW_EVENTS,
      mix,
      loadavg: os.loadavg(),
    },
    targets: { mirror: TARGET_RATIO, map: TARGET_RATIO },
    results: {
      baselineRowsPerSec: baseline,
      mirror: { ...summary('mirror'), pass: ratio('mirror') >= TARGET_RATIO },
      map: { ...summary('map'), pass: ratio('map') >= TARGET_RATIO },
      naive: summary('naive'),
      mirrorOneTransaction: summary('mirror1'),
      writeFloor: summary('floor'),
      journalRowCopy: summary('jcopy'),
      journalReadFloor: summary('jread'),
      readPlusWriteFloorBound: bound,
      verifyRowsPerSec: verifyTimed.perSec,
      mirrorVsNaive: vsNaive,
      mirrorVsJournalCopy: vsJournalCopy,
      mirrorUnwatched: summary('unwatched'),
      mirrorProtected: summary('protected'),
      mirrorGrouped: summary('grouped'),
      mirrorVsFloor: {
        mixed: vsFloor(runs.mirror, runs.floor, runs.jread),
        groupedMixed: vsFloor(runs.grouped, runs.floor, runs.jread),
        limit: MIXED_FLOOR_RATIO,
      },
      oncePerKey: {
        mix: once.sc.mix,
        mirror: vsFloor(once.runs.mirror, once.runs.floor, once.runs.jread),
        grouped: vsFloor(once.runs.grouped, once.runs.floor, once.runs.jread),
        limit: ONCE_FLOOR_RATIO,
        runs: once.runs,
      },
      watchRuns: watchPairs,
      watchShareOfFloor: {
        wall: watchShare('ms'),
        cpu: watchShare('cpuMs'),
        limit: WATCH_OF_FLOOR,
        pass: watchOwnShare <= WATCH_OF_FLOOR,
        cpuPerRound: watchShareRounds,
        ownCallsCpuMs: watchOwnMs,
        ownCallsShareOfFloor: watchOwnShare,
      },
      protectedOverMirror: { wall: protectOverWatched('ms'), cpu: protectOverWatched('cpuMs') },
      skipUnread: { ...skip, limit: SKIP_SPEEDUP, pass: skip.speedup.wall >= SKIP_SPEEDUP },
      fts5:
        slow.fts5 === undefined
          ? null
          : {
              eventsPerSec: slow.fts5.perSec,
              ratio: slow.fts5.perSec / baseline,
              cpuRatio: slow.fts5.perCpuSec / baselineCpu,
              events: SLOW_EVENTS,
            },
      custom:
        slow.custom === undefined
          ? null
          : {
              eventsPerSec: slow.custom.perSec,
              ratio: slow.custom.perSec / baseline,
              cpuRatio: slow.custom.perCpuSec / baselineCpu,
              events: SLOW_EVENTS,
            },
    },
    raw: { runs, ratios, slow },
    setupMs,
  };
  const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'apply.json'), `${JSON.stringify(out, null, 2)}\n`);
  // DESIGN.md: mirror apply over the floor (the read floor plus the write floor), per round, median: mixed >= 0.5, each key once >= 0.8.
  emitFigures('apply', [
    mirrorFigure('mixed', vsFloor(runs.mirror, runs.floor, runs.jread), vsFloor(runs.grouped, runs.floor, runs.jread)),
    mirrorFigure(
      'once',
      vsFloor(once.runs.mirror, once.runs.floor, once.runs.jread),
      vsFloor(once.runs.grouped, once.runs.floor, once.runs.jread),
    ),
    {
      id: 'apply.hand-edit-watch.share-of-floor',
      target: 'mirror apply with the default hand-edit watch (issue 19)',
      // Judged on the CPU time inside the watch's own calls: the paired on-minus-off difference of two ~700 ms runs
      // cannot resolve a few ms (40 interleaved pairs gave 4.2 +- 6.4 ms against the floor's ~110 ms), and a trace of
      // the target's files showed the same writes and syncs with the watch on and off (docs/projections.md).
      what: `CPU time inside the watch of hand edits' own calls during a mirror apply of ${EVENTS} mixed events, over the floor's CPU time (${watchOwnMs.toFixed(2)} ms per catch-up); context, too noisy to judge: with the watch on minus off, ${pct(watchShare('cpuMs'))} (cpu; wall ${pct(watchShare('ms'))}), per round ${watchShareRounds.map(pct).join(', ')}`,
      value: watchOwnShare,
      unit: 'x',
      op: '<=',
      limit: WATCH_OF_FLOOR,
    },
    skipFigure(skip),
    {
      id: 'apply.protect.vs-mirror',
      target: 'mirror apply into a protected target (opt-in, issue 19)',
      what: `mirror apply time into a target with sluice protect's guard triggers, over the same apply without them`,
      value: protectOverWatched('ms'),
      unit: 'x',
      op: 'none',
      limit: 0,
    },
  ]);
  log(`wrote ${path.relative(process.cwd(), path.join(outDir, 'apply.json'))}`);
}

/**
 * fts5/custom over (fromSeq, toSeq]: Syncer.applyBatch in --batch sized
 * steps (the same transactions runOnce would make), so a partial run is
 * possible. Checked against the source only when it covers every event.
 */
async function syncSlow(kind: 'fts5' | 'custom', pristine: string, fromSeq: number, toSeq: number): Promise<Timed> {
  if (toSeq - fromSeq === EVENTS) return syncOnce(kind, pristine, true);
  const target = freshTarget(pristine);
  const s = await Syncer.open(file(SRC), target, { projections: [KINDS[kind]] });
  let applied = 0;
  const stop = clock();
  try {
    for (let lo = fromSeq; lo < toSeq;) {
      const hi = Math.min(lo + (BATCH ?? (kind === 'custom' ? DEFAULT_BATCH.perEvent : DEFAULT_BATCH.setBased)), toSeq);
      const out = await s.applyBatch(KINDS[kind].name, lo, hi);
      if (out.kind !== 'applied') throw new Error(`${kind}: batch ${lo}..${hi} gave ${JSON.stringify(out)}`);
      applied += out.events;
      lo = hi;
    }
  } finally {
    s.close();
  }
  const t = stop();
  discard(target);
  return timed(toSeq - fromSeq, t, applied);
}

/** `verify` of a mirror target caught up over every event: rows checked per second. */
async function verifyOnce(pristine: string): Promise<Timed> {
  const target = freshTarget(pristine);
  const s = await Syncer.open(file(SRC), target, { projections: [MIRROR] });
  try {
    await s.runOnce();
  } finally {
    s.close();
  }
  const stop = clock();
  const v = await verify(file(SRC), target);
  const t = stop();
  discard(target);
  const p = v.projections[0];
  if (!v.ok || p === undefined) throw new Error(`verify: ${JSON.stringify(v)}`);
  return timed(p.checked, t, p.checked);
}

function checkpoint(p: string): void {
  const db = openDatabase(p, { role: 'target' });
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

function pct(x: number): string {
  return `${(x * 100).toFixed(2)}%`;
}

function fmtRate(perSec: number): string {
  return perSec >= 1e6 ? `${(perSec / 1e6).toFixed(2)}M/s` : `${(perSec / 1e3).toFixed(1)}k/s`;
}

/** Issue 22: the fts5 scenario with 90% counter-only updates, skipping on against off (bench/lib/skip-unread.ts). */
function skipScenario(): Promise<SkipUnreadResult> {
  log(`skip of unread updates: fts5 over title and body, ${SKIP_ROWS} rows, ${SKIP_UPDATES} updates (90% counter-only), ${ROUNDS} rounds`);
  return runSkipUnread({ dir, rows: SKIP_ROWS, updates: SKIP_UPDATES, rounds: ROUNDS, bodyWords: 600, log });
}

function skipRow(r: SkipUnreadResult): string[] {
  const verdictOf = r.speedup.wall >= SKIP_SPEEDUP ? 'ok' : 'MISS';
  return [
    `fts5 (title, body ~${r.bodyBytes} B), ${r.updates} updates, ${r.counterOnly} counter-only: skip on vs off (same run)`,
    '',
    fmtRatio(r.speedup.wall),
    fmtRatio(r.speedup.cpu),
    `>= ${SKIP_SPEEDUP}x`,
    verdictOf,
  ];
}

function skipFigure(r: SkipUnreadResult): Figure {
  return {
    id: 'apply.fts5.skip-unread-speedup',
    target: 'projections skip updates whose changed columns they do not read (issue 22)',
    what: `fts5 over title and body, ${r.updates} updates of which ${r.counterOnly} change only comment_count: time with the skip off over time with it on, same events, same run (median of ${ROUNDS} rounds; cpu ${fmtRatio(r.speedup.cpu)})`,
    value: r.speedup.wall,
    unit: 'x',
    op: '>=',
    limit: SKIP_SPEEDUP,
  };
}

/** `--only skip`: the skip scenario alone (its own JSON file, so a full run's stays). */
async function mainSkipOnly(): Promise<void> {
  const r = await skipScenario();
  process.stdout.write(`\n${renderTable(['path', '', 'speedup', 'cpu', 'target', ''], [skipRow(r)])}\n`);
  const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(
    path.join(outDir, 'apply-skip.json'),
    `${JSON.stringify({ bench: 'apply --only skip', when: new Date().toISOString(), versions: versions(), result: r }, null, 2)}\n`,
  );
  emitFigures('apply', [skipFigure(r)]);
}

try {
  await (ONLY === 'skip' ? mainSkipOnly() : ONLY === 'mirror' ? mainMirrorOnly() : main());
} finally {
  scratch.cleanup();
}
