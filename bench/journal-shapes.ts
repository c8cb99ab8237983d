/*
 * Experiments on the journal and trigger shape (bench only, never a test).
 *
 *   npx tsx bench/journal-shapes.ts [--rows 100000] [--rounds 5] [--only a,b] [--autocommit N]
 *                                   [--cache-size -2000] [--retention N] [--wide K] [--unique]
 *
 * Runs the DESIGN.md bulk workload (bench/lib/workload.ts) for the variants
 * of bench/lib/variants.ts: src's shape with one knob changed at a time
 * (bench/lib/shapes.ts is a knobbed scratch copy of src/capture/triggers.ts),
 * combinations, lower bounds, keys mode and chronicle. Each variant is paired
 * with its own no-capture run every round, phases in lockstep, and the table
 * shows the median over rounds of variant / paired baseline, on process CPU
 * time and on wall time (the machine is shared: CPU time is the steadier).
 * For a load-independent ranking, count instructions with
 * bench/shape-instructions.ts.
 *
 * `--autocommit N` also runs N single-row autocommit writes per phase.
 * `--retention N` sets a small retention so pruning really deletes (steady
 * state). `--wide K` adds K INTEGER columns to t. `--unique` gives t a
 * secondary UNIQUE index (src then installs its REPLACE guards).
 * `--cache-size` sets the writer's PRAGMA cache_size. Results also go to
 * bench/out/journal-shapes.json.
 *
 * Before timing, it checks that the scratch builder reproduces src's triggers
 * byte for byte, and that the proposed "best" shape journals a script of edge
 * cases exactly as src does.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../src/sqlite/connection.ts';
import {
  autocommitPhases,
  bulkPhases,
  fmtMs,
  fmtRatio,
  freshDb,
  intFlag,
  makeScratch,
  makeWorkload,
  medianTimes,
  minRatio,
  pairedRatio,
  pairedRounds,
  PHASES,
  renderTable,
  roundRatios,
  runBulk,
  runsOf,
  type PairedResults,
  type PhaseTimes,
  type Variant,
  type Workload,
} from './lib/workload.ts';
import { checkScratchMatchesSrc, DEFAULT_SHAPE, edgeCaseJournal } from './lib/shapes.ts';
import { BEST, shapeVariants } from './lib/variants.ts';

const argv = process.argv.slice(2);
const rows = intFlag(argv, 'rows', 100_000);
const rounds = intFlag(argv, 'rounds', 5);
const autocommit = intFlag(argv, 'autocommit', 0, 0);
const retention = intFlag(argv, 'retention', 0, 0);
const wide = intFlag(argv, 'wide', 0, 0);
const unique = argv.includes('--unique');
const cacheArg = argv.indexOf('--cache-size');
const cacheSize = cacheArg === -1 ? undefined : Number(argv[cacheArg + 1]);
const onlyArg = argv.indexOf('--only');
const only = onlyArg === -1 ? undefined : String(argv[onlyArg + 1]).split(',');

const ALL = shapeVariants({ retention, wide, unique });
const baseline = ALL[0] as Variant;
const variants = ALL.slice(1).filter((v) => only === undefined || only.includes(v.name));

function main(): void {
  const w: Workload = makeWorkload(rows);
  const { dir, cleanup } = makeScratch('sluice-shapes-');
  try {
    // The scratch builder must equal src for the default shape, or the comparisons mean nothing.
    {
      const { db, dispose } = freshDb(dir, () => {});
      checkScratchMatchesSrc(db, 't');
      dispose();
      // ... and the proposed shape must journal the edge cases exactly as src does.
      const make = (setup: (db: Db) => void) => freshDb(dir, setup);
      if (edgeCaseJournal(make, DEFAULT_SHAPE) !== edgeCaseJournal(make, { ...DEFAULT_SHAPE, ...BEST })) {
        throw new Error('the "best" shape journals the edge cases differently from src: it is not a valid proposal');
      }
    }
    const dbOptions = cacheSize === undefined ? {} : { cacheSize };
    // Warm-up (JIT, page cache, file system), not recorded.
    {
      const small = makeWorkload(Math.min(rows, 5000));
      for (const v of [baseline, ...variants]) {
        const { db, dispose } = freshDb(dir, v.setup, dbOptions);
        runBulk(db, small);
        dispose();
      }
    }
    const progress = (what: string) => (r: number) => process.stderr.write(`${what} round ${r + 1}/${rounds} done\n`);
    const bulk = pairedRounds(baseline, variants, {
      dir,
      rounds,
      db: dbOptions,
      phases: (db) => bulkPhases(db, w),
      onRound: progress('bulk'),
    });
    const auto =
      autocommit > 0
        ? pairedRounds(baseline, variants, {
            dir,
            rounds,
            db: dbOptions,
            phases: (db) => autocommitPhases(db, w, autocommit),
            onRound: progress('autocommit'),
          })
        : undefined;

    const summarize = (res: PairedResults) =>
      variants.map((v) => ({
        name: v.name,
        note: v.note,
        wallMs: medianTimes(runsOf(res, v.name, 'wall')),
        cpuMs: medianTimes(runsOf(res, v.name, 'cpu')),
        wallRatio: pairedRatio(res, v.name, 'wall'),
        cpuRatio: pairedRatio(res, v.name, 'cpu'),
        minWallRatio: minRatio(res, v.name, 'wall'),
        roundCpuRatios: roundRatios(res, v.name, 'cpu'),
        roundWallRatios: roundRatios(res, v.name, 'wall'),
      }));
    const report = (title: string, res: PairedResults) => {
      const base = medianTimes(runsOf(res, baseline.name, 'cpu'));
      const baseWall = medianTimes(runsOf(res, baseline.name, 'wall'));
      const sum = summarize(res);
      const r3 = (t: PhaseTimes) => PHASES.map((p) => fmtRatio(t[p]));
      const lines = [
        [
          baseline.name,
          ...PHASES.map((p) => fmtMs(base[p])),
          '1.00x',
          '1.00x',
          '1.00x',
          ...PHASES.map((p) => fmtMs(baseWall[p])),
          '',
          '',
          baseline.note,
        ],
        ...sum.map((x) => [x.name, ...PHASES.map((p) => fmtMs(x.cpuMs[p])), ...r3(x.cpuRatio), ...r3(x.wallRatio), x.note]),
      ];
      console.log(`\n${title}`);
      console.log(
        renderTable(
          ['variant', 'cpu ins', 'cpu upd', 'cpu del', 'CPU ins', 'CPU upd', 'CPU del', 'wall ins', 'wall upd', 'wall del', 'shape'],
          lines,
        ),
      );
      return { baselineCpuMs: base, baselineWallMs: baseWall, variants: sum };
    };
    console.log(
      `journal shapes: ${rows} rows, ${rounds} rounds${cacheSize === undefined ? '' : `; cache_size=${cacheSize}`}${retention > 0 ? `; retention=${retention}` : ''}${wide > 0 ? `; t has ${5 + wide} columns` : ''}${unique ? '; t has UNIQUE(name)' : ''}`,
    );
    console.log(
      'cpu = median process CPU ms; CPU/wall = median over rounds of variant / paired no-capture run (the baseline row shows its wall ms under "wall")',
    );
    const bulkSummary = report('bulk (one transaction per phase)', bulk);
    const autoSummary =
      auto === undefined ? undefined : report(`autocommit (${Math.min(autocommit, rows)} single-row writes per phase)`, auto);
    const outDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out');
    fs.mkdirSync(outDir, { recursive: true });
    const summary = {
      rows,
      rounds,
      autocommit,
      cacheSize: cacheSize ?? null,
      retention: retention || null,
      wide,
      unique,
      loadavg: os.loadavg(),
      bulk: bulkSummary,
      autocommitResults: autoSummary ?? null,
    };
    fs.writeFileSync(path.join(outDir, 'journal-shapes.json'), `${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    cleanup();
  }
}

main();
