/*
 * The CPU one follower pass costs, in process, beside bench/follow.ts (which
 * measures the whole path between processes): a Syncer following N mirrors
 * (the "*" set of N captured tables), then, repeated: one single-row commit
 * to table i mod N by another connection, and one runOnce() with the
 * follower's acknowledgement interval. The figure is the CPU time of
 * runOnce alone (process.cpuUsage around it), per pass. Bench only; for
 * profiling the pass: node --cpu-prof --import tsx bench/follow-pass.ts --dist
 *
 *   npx tsx bench/follow-pass.ts [--tables N (1)] [--passes N (2000)] [--progress (with an onProgress, as the CLI's human mode)] [--dist (the compiled dist/src)]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as EnableMod from '../src/capture/enable.ts';
import type * as ConnMod from '../src/sqlite/connection.ts';
import type * as SyncMod from '../src/apply/sync/sync.ts';

// --dist: the compiled modules (dist/src), as the CLI runs them, for a profile without tsx.
const base = process.argv.includes('--dist') ? '../dist/src' : '../src';
const ext = process.argv.includes('--dist') ? '.js' : '.ts';
const { enable } = (await import(`${base}/capture/enable${ext}`)) as typeof EnableMod;
const { openDatabase } = (await import(`${base}/sqlite/connection${ext}`)) as typeof ConnMod;
const { Syncer } = (await import(`${base}/apply/sync/sync${ext}`)) as typeof SyncMod;
import { intFlag } from './lib/workload.ts';

const argv = process.argv.slice(2);
const N = intFlag(argv, 'tables', 1);
const PASSES = intFlag(argv, 'passes', 2000);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-follow-pass-'));
const src = path.join(dir, 'source.db');
const tables = Array.from({ length: N }, (_, i) => `t${i + 1}`);
const w = openDatabase(src, { create: true, role: 'source', wal: true });
for (const t of tables) w.exec(`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)`);
enable(w, tables);
const ins = tables.map((t) => w.prepare<[number, string, number]>(`INSERT INTO ${t} (id, v, n) VALUES (?, ?, ?)`));
const s = await Syncer.open(src, path.join(dir, 'cache.db'), argv.includes('--progress') ? { onProgress: () => {} } : {});
await s.runOnce({ acknowledgeIntervalMs: 1000, leaveQuiet: !argv.includes('--step-all') });
let id = 1;
const run = async (n: number) => {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let inner = 0;
  for (let i = 0; i < n; i++) {
    ins[id % N]?.run(id, 'x', id);
    id++;
    const c = process.cpuUsage();
    await s.runOnce({ acknowledgeIntervalMs: 1000, leaveQuiet: !argv.includes('--step-all') });
    const d = process.cpuUsage(c);
    inner += d.user + d.system;
  }
  const d = process.cpuUsage(c0);
  return { cpuUsPerPass: inner / n, wallUsPerPass: (1000 * (performance.now() - t0)) / n, allCpuUs: (d.user + d.system) / n };
};
await run(200);
const r = await run(PASSES);
process.stdout.write(
  `${N} table(s): ${r.cpuUsPerPass.toFixed(0)} us CPU per pass (insert+pass ${r.allCpuUs.toFixed(0)} us, wall ${r.wallUsPerPass.toFixed(0)} us), load ${os.loadavg()[0]?.toFixed(2)}\n`,
);
s.close();
w.close();
fs.rmSync(dir, { recursive: true, force: true });
