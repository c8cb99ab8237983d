/*
 * Journal designs in steady state, against the bare-trigger floor (bench only, never a test).
 *
 *   npx tsx bench/journal-steady.ts [--rows 100000] [--rounds 5] [--only src,ring] [--states fresh,1k,1m]
 *                                   [--cache-size N] [--quick]
 *
 * The DESIGN.md bulk workload (bench/lib/workload.ts) for each design of
 * bench/lib/designs.ts on three journals: `fresh` (empty, default retention
 * 1,000,000), `1k` (retention 1,024, warmed 8,192 events past it) and `1m`
 * (the default retention, filled to 1,008,192 events), so that in the last
 * two every write runs with the journal at its bound. Every variant is paired
 * each round with its own fresh run of the bare-trigger floor
 * (bench/lib/steady.ts), phases in lockstep, and the tables show the median
 * over rounds of variant / paired floor, on wall time and on process CPU
 * time. `none` (no capture) and `floor-clock` are paired the same way, for
 * scale. After each timed run the design's journal is checked (newest seq,
 * rows kept, pruned_through). `--quick`: 20k rows, 3 rounds. `--cache-size`
 * sets PRAGMA cache_size on every writer (the floor's too). Results also go
 * to bench/out/journal-steady.json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bulkPhases,
  fmtRatio,
  intFlag,
  makeScratch,
  makeWorkload,
  pairedRatio,
  pairedRounds,
  PHASES,
  renderTable,
  roundRatios,
  type Metric,
  type Variant,
} from './lib/workload.ts';
// This bench's base is the floor without its clock (its design tables were measured so); the floor with it is a variant.
import { FLOOR_NO_CLOCK as FLOOR, FLOOR as FLOOR_CLOCK } from './lib/steady.ts';
import { DESIGNS, STATES, designVariant, type JournalState } from './lib/designs.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help')) {
  process.stdout.write(
    'usage: npx tsx bench/journal-steady.ts [--rows N] [--rounds N] [--only a,b] [--states fresh,1k,1m] [--cache-size N] [--quick]\n',
  );
  process.exit(0);
}
const quick = argv.includes('--quick');
const rows = intFlag(argv, 'rows', quick ? 20_000 : 100_000);
const rounds = intFlag(argv, 'rounds', quick ? 3 : 5);
const cacheI = argv.indexOf('--cache-size');
const cacheSize = cacheI === -1 ? undefined : Number(argv[cacheI + 1]);
const list = (flag: string) => {
  const i = argv.indexOf(flag);
  return i === -1 ? undefined : String(argv[i + 1]).split(',');
};
const only = list('--only');
const states = (list('--states') ?? STATES) as JournalState[];
for (const s of states) if (!STATES.includes(s)) throw new Error(`unknown state ${s}; use ${STATES.join(',')}`);
const designs = DESIGNS.filter((d) => only === undefined || only.includes(d.name));
if (only !== undefined && designs.length !== only.length)
  throw new Error(`unknown design in ${only.join(',')}; have ${DESIGNS.map((d) => d.name).join(',')}`);

const TARGET = 1.25;
const NONE: Variant = { name: 'none', note: 'no capture', setup: () => {} };

const scratch = makeScratch('sluice-steady-');
try {
  const started = Date.now();
  const load0 = os.loadavg();
  const w = makeWorkload(rows);
  const variants = [NONE, FLOOR_CLOCK, ...designs.flatMap((d) => states.map((s) => designVariant(d, s, rows)))];
  const res = pairedRounds(FLOOR, variants, {
    dir: scratch.dir,
    rounds,
    phases: (db) => bulkPhases(db, w),
    db: cacheSize === undefined ? {} : { cacheSize },
    onRound: (r) => process.stderr.write(`round ${r + 1}/${rounds} (${((Date.now() - started) / 1000).toFixed(0)} s)\n`),
  });
  const cell = (name: string, metric: Metric) => pairedRatio(res, name, metric);
  console.log(
    `journal designs vs the bare-trigger floor: ${rows} rows, ${rounds} rounds, Node ${process.version}, load ${load0.map((x) => x.toFixed(2)).join(' ')}`,
  );
  console.log(
    'ratio = median over rounds of (variant / its paired floor run); fresh = empty journal; 1k = retention 1,024 warmed past it; 1m = retention 1,000,000 filled\n',
  );
  for (const metric of ['wall', 'cpu'] as const) {
    const head = ['design', ...states.flatMap((s) => PHASES.map((p) => `${s} ${p.slice(0, 3)}`)), `all <= ${TARGET}`];
    const body = designs.map((d) => {
      const rs = states.map((s) => cell(`${d.name}@${s}`, metric));
      const ok = rs.every((r) => PHASES.every((p) => r[p] <= TARGET));
      return [d.name, ...rs.flatMap((r) => PHASES.map((p) => fmtRatio(r[p]))), ok ? 'yes' : 'no'];
    });
    const scale = [NONE, FLOOR_CLOCK].map((v) => {
      const r = cell(v.name, metric);
      return [v.name, ...states.flatMap(() => PHASES.map((p) => fmtRatio(r[p]))), ''];
    });
    console.log(`${metric} time`);
    console.log(renderTable(head, [...scale, ...body]));
    console.log('');
  }
  for (const d of designs) console.log(`${d.name}: ${d.note}\n  readers: ${d.readers}`);
  const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
  fs.mkdirSync(outDir, { recursive: true });
  const out = {
    bench: 'journal-steady',
    date: new Date(started).toISOString(),
    durationS: (Date.now() - started) / 1000,
    config: {
      rows,
      rounds,
      states,
      cacheSize: cacheSize ?? 'default (-2000)',
      baseline: 'floor',
      loadavgStart: load0,
      loadavgEnd: os.loadavg(),
    },
    variants: Object.fromEntries(
      variants.map((v) => [
        v.name,
        { note: v.note, ratio: cell(v.name, 'wall'), cpuRatio: cell(v.name, 'cpu'), roundRatios: roundRatios(res, v.name, 'wall') },
      ]),
    ),
  };
  const file = path.join(outDir, 'journal-steady.json');
  fs.writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`\nwritten to ${path.relative(process.cwd(), file)} (${out.durationS.toFixed(0)} s)`);
} finally {
  scratch.cleanup();
}
