/*
 * The DESIGN.md capture workload, shared by bench/capture-overhead.ts and
 * bench/journal-shapes.ts. Bench only: nothing here asserts on time.
 *
 * One table t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)
 * with 32-byte blobs. Each phase (insert all rows, update name and n of all
 * rows, delete all rows) is one transaction of prepared statements run in a
 * JS loop. Every variant gets a fresh file database in WAL mode, so journal
 * growth in one variant never slows the next.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { openDatabase, type Db } from '../../src/sqlite/connection.ts';

export const TABLE_DDL = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)';

export interface Workload {
  readonly rows: number;
  readonly names: readonly string[];
  readonly renamed: readonly string[];
  readonly reals: readonly number[];
  readonly blobs: readonly Buffer[];
}

/** Pre-built values, so that every variant binds the very same data and the JS loop allocates little. */
export function makeWorkload(rows: number): Workload {
  const pool = crypto.randomBytes(32 * rows);
  const names: string[] = [];
  const renamed: string[] = [];
  const reals: number[] = [];
  const blobs: Buffer[] = [];
  for (let i = 1; i <= rows; i++) {
    names.push(`name-${i}`);
    renamed.push(`renamed-${i}`);
    reals.push(i / 3);
    blobs.push(pool.subarray(32 * (i - 1), 32 * i));
  }
  return { rows, names, renamed, reals, blobs };
}

export interface PhaseTimes {
  insert: number;
  update: number;
  delete: number;
}

export const PHASES = ['insert', 'update', 'delete'] as const;
export type Phase = (typeof PHASES)[number];

export interface DbOptions {
  /** PRAGMA cache_size for the writer (default: SQLite's own, -2000 = 2 MB). */
  readonly cacheSize?: number;
}

/** A scratch directory for one bench run, removed by `cleanup`. */
export function makeScratch(prefix: string): { dir: string; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

let fileCounter = 0;

/**
 * A fresh database file opened the way sluice opens sources (openDatabase:
 * WAL, busy timeout, recursive_triggers=ON, safe integers), with
 * synchronous=NORMAL and the table t created. `setup` installs the capture
 * variant under test.
 */
export function freshDb(dir: string, setup: (db: Db) => void, options: DbOptions = {}): { db: Db; dispose: () => void } {
  const file = path.join(dir, `v${fileCounter++}.db`);
  const db = openDatabase(file, { create: true, role: 'bench', wal: true });
  db.pragma('synchronous = NORMAL');
  if (options.cacheSize !== undefined) db.pragma(`cache_size = ${options.cacheSize}`);
  db.exec(TABLE_DDL);
  setup(db);
  // Start every variant from a checkpointed, empty WAL.
  db.pragma('wal_checkpoint(TRUNCATE)');
  const dispose = () => {
    db.close();
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
  };
  return { db, dispose };
}

// A GC in the middle of a timed phase is noise: collect before each phase.
// (tsx gives no --expose-gc, so the flag is set at run time.)
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** One timed phase: wall-clock ms, and the process CPU ms (user + system) spent meanwhile. */
export interface Sample {
  readonly wall: number;
  readonly cpu: number;
}

/*
 * CPU time is recorded next to wall time because the machine is shared: on
 * two cores with other jobs running, wall time includes waiting for a core.
 * CPU time leaves that out (and also leaves out waiting on fsync), so it is
 * the steadier of the two for comparing trigger shapes.
 */
function timed(fn: () => void): Sample {
  gc();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

/** One timed phase per entry; each call runs the phase and returns its times. */
export type PhaseRunner = Record<Phase, () => Sample>;

/** The times of one database's three phases. */
export interface Measured {
  readonly wall: PhaseTimes;
  readonly cpu: PhaseTimes;
}

export type Metric = keyof Measured;

/**
 * The three bulk phases on `db`, each ONE transaction of prepared statements
 * in a JS loop (commit, and the WAL checkpoint it triggers, included).
 */
export function bulkPhases(db: Db, w: Workload): PhaseRunner {
  const ins = db.prepare('INSERT INTO t (id, name, n, r, b) VALUES (?, ?, ?, ?, ?)');
  const upd = db.prepare('UPDATE t SET name = ?, n = ? WHERE id = ?');
  const del = db.prepare('DELETE FROM t WHERE id = ?');
  const tx = (body: () => void) => () =>
    timed(() => {
      db.exec('BEGIN');
      body();
      db.exec('COMMIT');
    });
  return {
    insert: tx(() => {
      for (let i = 0; i < w.rows; i++) ins.run(i + 1, w.names[i], i + 1, w.reals[i], w.blobs[i]);
    }),
    update: tx(() => {
      for (let i = 0; i < w.rows; i++) upd.run(w.renamed[i], 2 * (i + 1), i + 1);
    }),
    delete: tx(() => {
      for (let i = 0; i < w.rows; i++) del.run(i + 1);
    }),
  };
}

/** `count` single-row writes per phase, each its own autocommit transaction. */
export function autocommitPhases(db: Db, w: Workload, count: number): PhaseRunner {
  const n = Math.min(count, w.rows);
  const ins = db.prepare('INSERT INTO t (id, name, n, r, b) VALUES (?, ?, ?, ?, ?)');
  const upd = db.prepare('UPDATE t SET name = ?, n = ? WHERE id = ?');
  const del = db.prepare('DELETE FROM t WHERE id = ?');
  return {
    insert: () =>
      timed(() => {
        for (let i = 0; i < n; i++) ins.run(i + 1, w.names[i], i + 1, w.reals[i], w.blobs[i]);
      }),
    update: () =>
      timed(() => {
        for (let i = 0; i < n; i++) upd.run(w.renamed[i], 2 * (i + 1), i + 1);
      }),
    delete: () =>
      timed(() => {
        for (let i = 0; i < n; i++) del.run(i + 1);
      }),
  };
}

/**
 * Runs several databases in lockstep: phase by phase, each database in
 * `order`, so that a variant and the baseline it is compared with are
 * measured seconds apart, not minutes. Returns the times in `order`.
 */
export function lockstep(runners: readonly PhaseRunner[]): Measured[] {
  const out = runners.map(() => ({ wall: { insert: 0, update: 0, delete: 0 }, cpu: { insert: 0, update: 0, delete: 0 } }));
  for (const p of PHASES) {
    runners.forEach((r, i) => {
      const s = r[p]();
      const o = out[i] as { wall: PhaseTimes; cpu: PhaseTimes };
      o.wall[p] = s.wall;
      o.cpu[p] = s.cpu;
    });
  }
  return out;
}

/** Convenience: one database, bulk phases in order. */
export function runBulk(db: Db, w: Workload): Measured {
  return lockstep([bulkPhases(db, w)])[0] as Measured;
}

/**
 * sqlite-chronicle's schema and triggers, exactly as reference 004 prints
 * them for `dogs`, adapted to t: keyed on id, WHEN over every non-key column.
 */
export function chronicleDdl(): string[] {
  const ms = "CAST((julianday('now') - 2440587.5)*86400*1000 AS INTEGER)";
  const nextVersion = 'COALESCE((SELECT MAX(__version) FROM "_chronicle_t"),0) + 1';
  return [
    `CREATE TABLE "_chronicle_t" (
  "id" INTEGER,
  __added_ms INTEGER,
  __updated_ms INTEGER,
  __version INTEGER,
  __deleted INTEGER DEFAULT 0,
  PRIMARY KEY("id")
)`,
    'CREATE INDEX "_chronicle_t__version_idx" ON "_chronicle_t"(__version)',
    `CREATE TRIGGER "chronicle_t_ai"
AFTER INSERT ON "t"
FOR EACH ROW
BEGIN
  INSERT OR IGNORE INTO "_chronicle_t" (
    "id", __added_ms, __updated_ms, __version, __deleted
  ) VALUES (
    NEW."id",
    ${ms},
    ${ms},
    ${nextVersion},
    0
  );
END`,
    `CREATE TRIGGER "chronicle_t_au"
AFTER UPDATE ON "t"
FOR EACH ROW
WHEN OLD."name" IS NOT NEW."name" OR OLD."n" IS NOT NEW."n" OR OLD."r" IS NOT NEW."r" OR OLD."b" IS NOT NEW."b"
BEGIN
  UPDATE "_chronicle_t"
  SET __updated_ms = ${ms},
    __version = ${nextVersion}
  WHERE "id"=NEW."id";
END`,
    `CREATE TRIGGER "chronicle_t_ad"
AFTER DELETE ON "t"
FOR EACH ROW
BEGIN
  UPDATE "_chronicle_t"
    SET __updated_ms = ${ms},
      __version = ${nextVersion},
      __deleted = 1
  WHERE "id"=OLD."id";
END`,
  ];
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** Parses `--name N` integer flags; anything else is a usage error (exit 2). */
export function intFlag(argv: readonly string[], name: string, fallback: number, min = 1): number {
  const i = argv.indexOf(`--${name}`);
  if (i === -1) return fallback;
  const raw = argv[i + 1];
  const v = raw === undefined ? Number.NaN : Number(raw);
  if (!Number.isSafeInteger(v) || v < min) {
    process.stderr.write(`--${name} needs a whole number >= ${min} (got ${raw ?? 'nothing'}).\n`);
    process.exit(2);
  }
  return v;
}

export function fmtMs(ms: number): string {
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

export function fmtRatio(r: number): string {
  return `${r.toFixed(2)}x`;
}

/** Renders rows of cells as an aligned text table (first column left, the rest right). */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...all.map((r) => (r[c] ?? '').length)));
  const line = (r: readonly string[]) =>
    r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export interface Variant {
  readonly name: string;
  /** One line saying what the variant is. */
  readonly note: string;
  /** Installs the capture variant on a fresh database that already has t. */
  readonly setup: (db: Db) => void;
  /** Optional sanity check after the timed phases (not timed): returns a problem, or undefined when capture did its job. */
  readonly check?: (db: Db) => string | undefined;
}

export interface Pair {
  readonly base: Measured;
  readonly test: Measured;
}

export interface PairedResults {
  readonly baseline: string;
  /** Per variant, one entry per round: its times and its paired baseline's. */
  readonly pairs: Map<string, Pair[]>;
}

export interface PairedOptions {
  readonly dir: string;
  readonly rounds: number;
  readonly phases: (db: Db) => PhaseRunner;
  readonly db?: DbOptions;
  readonly onRound?: (round: number) => void;
}

/**
 * Each round pairs every variant with its own fresh no-capture baseline, run
 * in lockstep (baseline first in even rounds, variant first in odd rounds),
 * and rotates the variant order. The machine is noisy (two cores, other jobs):
 * a pair is measured within a second or two, so drift hits both sides alike,
 * and the median of the per-round ratios is what the targets are judged on.
 */
export function pairedRounds(baseline: Variant, variants: readonly Variant[], o: PairedOptions): PairedResults {
  const pairs = new Map<string, Pair[]>(variants.map((v) => [v.name, []]));
  for (let r = 0; r < o.rounds; r++) {
    const order = variants.map((_, i) => variants[(i + r) % variants.length] as Variant);
    for (const v of order) {
      const base = freshDb(o.dir, baseline.setup, o.db);
      const test = freshDb(o.dir, v.setup, o.db);
      try {
        const baseFirst = r % 2 === 0;
        const runners = baseFirst ? [o.phases(base.db), o.phases(test.db)] : [o.phases(test.db), o.phases(base.db)];
        const [first, second] = lockstep(runners) as [Measured, Measured];
        pairs.get(v.name)?.push(baseFirst ? { base: first, test: second } : { base: second, test: first });
        const problem = v.check?.(test.db);
        if (problem !== undefined) throw new Error(`variant ${v.name} did not capture as expected: ${problem}`);
      } finally {
        base.dispose();
        test.dispose();
      }
    }
    o.onRound?.(r);
  }
  return { baseline: baseline.name, pairs };
}

const divide = (a: PhaseTimes, b: PhaseTimes): PhaseTimes => ({
  insert: a.insert / b.insert,
  update: a.update / b.update,
  delete: a.delete / b.delete,
});

/** Per round, variant / paired baseline. */
export function roundRatios(res: PairedResults, name: string, metric: Metric): PhaseTimes[] {
  return (res.pairs.get(name) ?? []).map((p) => divide(p.test[metric], p.base[metric]));
}

/** Every run of a variant (or, for the baseline name, every baseline run). */
export function runsOf(res: PairedResults, name: string, metric: Metric): PhaseTimes[] {
  if (name === res.baseline) return [...res.pairs.values()].flat().map((p) => p.base[metric]);
  return (res.pairs.get(name) ?? []).map((p) => p.test[metric]);
}

/** The median of the per-round ratios: the number the targets are judged on. */
export function pairedRatio(res: PairedResults, name: string, metric: Metric = 'wall'): PhaseTimes {
  return medianTimes(roundRatios(res, name, metric));
}

/** min(variant runs) / min(its baseline runs): the least disturbed runs of each. */
export function minRatio(res: PairedResults, name: string, metric: Metric = 'wall'): PhaseTimes {
  const pairs = res.pairs.get(name) ?? [];
  const min = (xs: PhaseTimes[]): PhaseTimes => ({
    insert: Math.min(...xs.map((x) => x.insert)),
    update: Math.min(...xs.map((x) => x.update)),
    delete: Math.min(...xs.map((x) => x.delete)),
  });
  return divide(min(pairs.map((p) => p.test[metric])), min(pairs.map((p) => p.base[metric])));
}

/** Median per phase of a list of PhaseTimes. */
export function medianTimes(xs: readonly PhaseTimes[]): PhaseTimes {
  return { insert: median(xs.map((x) => x.insert)), update: median(xs.map((x) => x.update)), delete: median(xs.map((x) => x.delete)) };
}
