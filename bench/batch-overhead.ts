/*
 * The fixed cost of one small batch: what a follower pays per source commit
 * when it keeps up (`sync --follow` applies one batch per commit).
 *
 *   npx tsx bench/batch-overhead.ts [--batches N (2000)] [--rounds N (3)]
 *
 * One process. A source t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER) with
 * capture enabled (images mode) and one Syncer per projection kind (mirror;
 * map with a filter and a typed computed column; fts5 external content),
 * each on its own target, opened and snapshotted untimed. Timed: --batches
 * times, one autocommit INSERT on the source (untimed) then `runOnce()`
 * (timed, wall and this process's CPU), so each run applies one event.
 *
 * Baseline, in the same run and the same way: a hand-written minimal
 * applier step on a connection opened like the Syncer's (source attached to
 * target): BEGIN, read the source's max(seq), INSERT OR REPLACE the one
 * target row read by seq from the journal, UPDATE a cursor row, COMMIT; no
 * checks. The ratio (kind / baseline, median over rounds; lower is better)
 * says how much the checks, the metadata and the bookkeeping add on top of
 * the transaction that any applier commits. Bench only: nothing is judged.
 * Figures before and after issue 11: docs/projections.md, "Where a mirror
 * batch's time goes".
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Syncer } from '../src/apply/sync/sync.ts';
import { enable } from '../src/capture/enable.ts';
import { openDatabase, type Db } from '../src/sqlite/connection.ts';
import type { ProjectionDefinitionInput } from '../src/projection/definition.ts';
import { intFlag, makeScratch, median, renderTable } from './lib/workload.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write('usage: npx tsx bench/batch-overhead.ts [--batches N (2000)] [--rounds N (3)]\n');
  process.exit(0);
}
const BATCHES = intFlag(argv, 'batches', 2000);
const ROUNDS = intFlag(argv, 'rounds', 3);
const scratch = makeScratch('sluice-bench-batch-');
const KINDS: Record<string, ProjectionDefinitionInput> = {
  mirror: { name: 't', source: 't', kind: 'mirror' },
  map: { name: 'm', source: 't', kind: 'map', columns: { id: 'id', v: 'v', u: { expr: 'upper(v)', type: 'TEXT' } }, filter: 'n >= 0' },
  fts5: { name: 'f', source: 't', kind: 'fts5', columns: ['v'], content: 'external' },
};

interface Cost {
  wallUs: number;
  cpuUs: number;
}

let nextId = 1;
function source(round: number, name: string): { db: Db; file: string } {
  const file = path.join(scratch.dir, `${name}-${round}-src.db`);
  const db = openDatabase(file, { create: true, role: 'bench', wal: true });
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)');
  enable(db, ['t']);
  return { db, file };
}

async function timeBatches(db: Db, run: () => unknown): Promise<Cost> {
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
  let wall = 0;
  let cpu = 0;
  for (let i = 0; i < BATCHES; i++) {
    const id = nextId++;
    ins.run(id, `value ${id}`, id);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await run();
    wall += performance.now() - t0;
    const c = process.cpuUsage(c0);
    cpu += (c.user + c.system) / 1000;
  }
  return { wallUs: (wall / BATCHES) * 1000, cpuUs: (cpu / BATCHES) * 1000 };
}

async function kindCost(round: number, kind: string): Promise<Cost> {
  const src = source(round, kind);
  const s = await Syncer.open(src.file, path.join(scratch.dir, `${kind}-${round}-tgt.db`), {
    projections: [KINDS[kind] as ProjectionDefinitionInput],
    acknowledge: false,
  });
  try {
    await s.runOnce();
    return await timeBatches(src.db, () => s.runOnce());
  } finally {
    s.close();
    src.db.close();
  }
}

async function baselineCost(round: number): Promise<Cost> {
  const src = source(round, 'baseline');
  const tgtFile = path.join(scratch.dir, `baseline-${round}-tgt.db`);
  openDatabase(tgtFile, { create: true, role: 'bench', wal: true }).close();
  const db = openDatabase(src.file, { role: 'bench' });
  db.prepare('ATTACH DATABASE ? AS tgt').run(tgtFile);
  db.pragma('tgt.journal_mode = WAL');
  db.exec('CREATE TABLE tgt.t (id INTEGER PRIMARY KEY, v TEXT, n INTEGER); CREATE TABLE tgt.cursor (id INTEGER PRIMARY KEY, seq INTEGER)');
  db.exec('INSERT INTO tgt.cursor VALUES (1, 0)');
  const hw = db.prepare('SELECT max(seq) FROM main._sluice_journal').pluck();
  const copy = db.prepare('INSERT OR REPLACE INTO tgt.t SELECT c3, c4, c5 FROM main._sluice_journal WHERE seq > ? AND seq <= ?');
  const cur = db.prepare('UPDATE tgt.cursor SET seq = ? WHERE id = 1');
  const at = db.prepare('SELECT seq FROM tgt.cursor WHERE id = 1').pluck();
  try {
    return await timeBatches(src.db, () => {
      db.exec('BEGIN');
      const to = Number(hw.get() ?? 0);
      copy.run(Number(at.get()), to);
      cur.run(to);
      db.exec('COMMIT');
    });
  } finally {
    db.close();
    src.db.close();
  }
}

const results: Record<string, Cost[]> = { baseline: [], mirror: [], map: [], fts5: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order so that no kind always runs right after the baseline.
    const order = ['baseline', ...Object.keys(KINDS)];
    for (let i = 0; i < round % order.length; i++) order.push(order.shift() as string);
    for (const k of order) (results[k] as Cost[]).push(k === 'baseline' ? await baselineCost(round) : await kindCost(round, k));
    process.stderr.write(
      `round ${round + 1}/${ROUNDS}: ${order.map((k) => `${k} ${Math.round((results[k] as Cost[])[round]?.wallUs ?? 0)} µs`).join(', ')}\n`,
    );
  }
  const rows = Object.keys(results).map((k) => {
    const rs = results[k] as Cost[];
    const ratio = (m: keyof Cost) => median(rs.map((r, i) => r[m] / ((results.baseline as Cost[])[i] as Cost)[m]));
    return [
      k,
      `${Math.round(median(rs.map((r) => r.wallUs)))} µs`,
      `${Math.round(median(rs.map((r) => r.cpuUs)))} µs`,
      `${ratio('wallUs').toFixed(2)}x`,
      `${ratio('cpuUs').toFixed(2)}x`,
    ];
  });
  process.stdout.write(`\none event per batch, ${BATCHES} batches, ${ROUNDS} rounds (median)\n\n`);
  process.stdout.write(`${renderTable(['path', 'wall per batch', 'cpu per batch', 'wall vs baseline', 'cpu vs baseline'], rows)}\n`);
  process.stdout.write(
    '\nbaseline: BEGIN; max(seq) of the source; INSERT OR REPLACE of the new journal row into the target; cursor UPDATE; COMMIT (no checks, no metadata).\n',
  );
  const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'batch-overhead.json'), `${JSON.stringify({ batches: BATCHES, rounds: ROUNDS, results }, null, 2)}\n`);
} finally {
  scratch.cleanup();
}
