/*
 * The one benchmark report (`npm run bench`): runs every benchmark below, in
 * a quick mode by default (about 10 minutes on a 2-core machine) or at the
 * DESIGN.md sizes with --full, each as its own process, one after another,
 * and writes bench/results/latest.json, latest.md (every figure against its
 * DESIGN.md target, pass or miss) and latest.svg (the ratios).
 *
 *   npx tsx bench/report.ts [--full] [--only name,name]
 *
 * Each bench writes its judged figures to the file the runner names in
 * SLUICE_BENCH_FIGURES (bench/lib/figures.ts); the runner deletes it first
 * and takes only figures written during this run, so nothing in the report
 * is copied from an earlier one. A bench that fails or writes none is
 * reported as not measured. Each bench's own output goes to
 * bench/out/report/<name>.log. To add a benchmark: one line in BENCHES, and
 * an emitFigures call at the end of the bench.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FIGURES_ENV, type FiguresFile } from './lib/figures.ts';
import { floorsOf, renderMarkdown, renderSvg, reportJson, type BenchRun, type FloorHistory, type Report } from './lib/report.ts';

interface BenchEntry {
  readonly name: string;
  /** Path from bench/. */
  readonly script: string;
  readonly quick: readonly string[];
  readonly full: readonly string[];
}

/** Every benchmark in the report, in the order they run (full: each bench's defaults are the DESIGN.md sizes). */
export const BENCHES: readonly BenchEntry[] = [
  {
    name: 'capture-overhead',
    script: 'capture-overhead.ts',
    quick: ['--rows', '50000', '--rounds', '3', '--autocommit', '2000'],
    full: [],
  },
  { name: 'feed', script: 'feed.ts', quick: ['--rows', '500000', '--calls', '5000'], full: [] },
  {
    name: 'apply',
    script: 'apply.ts',
    quick: ['--events', '100000', '--base', '50000', '--rounds', '3', '--slow-events', '20000'],
    full: [],
  },
  { name: 'import', script: 'import.ts', quick: ['--rows', '300000', '--events', '300000'], full: [] },
  { name: 'follow', script: 'follow.ts', quick: ['--seconds', '3', '--idle', '5'], full: [] },
  { name: 'run', script: 'run.ts', quick: ['--seconds', '3', '--idle', '5'], full: [] },
  { name: 'run-build', script: 'run-build.ts', quick: [], full: [] },
  { name: 'run-build-fts5', script: 'run-build.ts', quick: ['--kind', 'fts5'], full: ['--kind', 'fts5'] },
  { name: 'rebuild', script: 'rebuild.ts', quick: ['--rows', '100000'], full: [] },
  { name: 'rebuild-fts5', script: 'rebuild.ts', quick: ['--rows', '100000', '--kind', 'fts5'], full: ['--kind', 'fts5'] },
  { name: 'fan-out', script: 'fan-out.ts', quick: ['--events', '20000', '--seconds', '3'], full: [] },
  {
    name: 'fan-out-segment',
    script: 'fan-out.ts',
    quick: ['--events', '20000', '--seconds', '3', '--format', 'segment'],
    full: ['--format', 'segment'],
  },
  { name: 'verify-behind', script: 'verify-behind.ts', quick: ['--rows', '200000', '--events', '100000'], full: [] },
];

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

function parseArgs(argv: readonly string[]): { full: boolean; only?: Set<string> } {
  let full = false;
  let only: Set<string> | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--full') full = true;
    else if (a === '--only') only = new Set(String(argv[++i]).split(','));
    else {
      process.stderr.write(
        `unknown argument ${a}; usage: npx tsx bench/report.ts [--full] [--only ${BENCHES.map((b) => b.name).join(',')}]\n`,
      );
      process.exit(2);
    }
  }
  const unknown = [...(only ?? [])].filter((n) => !BENCHES.some((b) => b.name === n));
  if (unknown.length > 0) {
    process.stderr.write(`unknown bench ${unknown.join(', ')}; have ${BENCHES.map((b) => b.name).join(', ')}\n`);
    process.exit(2);
  }
  return only === undefined ? { full } : { full, only };
}

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv, log: string): Promise<number | null> {
  const out = fs.openSync(log, 'w');
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env, stdio: ['ignore', out, out] });
    child.on('close', (code) => {
      fs.closeSync(out);
      resolve(code);
    });
  });
}

async function runBench(b: BenchEntry, full: boolean, logs: string): Promise<BenchRun> {
  const argv = full ? b.full : b.quick;
  const figuresFile = path.join(logs, `${b.name}.figures.json`);
  fs.rmSync(figuresFile, { force: true });
  const log = path.join(logs, `${b.name}.log`);
  const started = Date.now();
  process.stdout.write(`bench ${b.name} ${argv.join(' ')} ... `);
  const exitCode = await run(
    process.execPath,
    ['--import', 'tsx', path.join(here, b.script), ...argv],
    { ...process.env, [FIGURES_ENV]: figuresFile },
    log,
  );
  const seconds = (Date.now() - started) / 1000;
  let figures: FiguresFile['figures'] = [];
  let error: string | undefined;
  if (exitCode !== 0) error = `exited ${exitCode ?? 'on a signal'}; see ${path.relative(root, log)}`;
  else if (!fs.existsSync(figuresFile)) error = 'wrote no figures';
  else {
    const f = JSON.parse(fs.readFileSync(figuresFile, 'utf8')) as FiguresFile;
    if (Date.parse(f.measuredAt) < started) error = 'its figures are older than this run';
    else figures = f.figures;
  }
  process.stdout.write(`${Math.round(seconds)} s, ${error ?? `${figures.length} figures`}\n`);
  return { name: b.name, argv, exitCode, seconds, figures, ...(error === undefined ? {} : { error }) };
}

async function main(): Promise<void> {
  const { full, only } = parseArgs(process.argv.slice(2));
  const logs = path.join(root, 'bench', 'out', 'report');
  fs.mkdirSync(logs, { recursive: true });
  const started = new Date();
  // follow and import run the compiled CLI (bin/sluice.js uses dist/): build it from this checkout first.
  const built = await run(
    process.execPath,
    [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    process.env,
    path.join(logs, 'build.log'),
  );
  if (built !== 0) {
    process.stderr.write(`the build failed; see ${path.relative(root, path.join(logs, 'build.log'))}\n`);
    process.exit(1);
  }
  // Each floor's speed in the previous report of this mode, kept apart from latest.json (a quick run must not
  // compare with a full one, and latest.json is rewritten by every run).
  const mode = full ? 'full' : 'quick';
  const floorsFile = path.join(root, 'bench', 'results', 'floors.json');
  const history = fs.existsSync(floorsFile)
    ? (JSON.parse(fs.readFileSync(floorsFile, 'utf8')) as Partial<Record<'quick' | 'full', FloorHistory>>)
    : {};
  const benches: BenchRun[] = [];
  for (const b of BENCHES) if (only === undefined || only.has(b.name)) benches.push(await runBench(b, full, logs));
  const previous = history[mode];
  const report: Report = {
    mode,
    startedAt: started.toISOString(),
    seconds: (Date.now() - started.getTime()) / 1000,
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${os.platform()} ${os.arch()}, Node ${process.version}`,
    benches,
    ...(previous === undefined ? {} : { previousFloors: previous }),
  };
  const results = path.join(root, 'bench', 'results');
  fs.mkdirSync(results, { recursive: true });
  fs.writeFileSync(path.join(results, 'latest.json'), `${JSON.stringify(reportJson(report), null, 2)}\n`);
  fs.writeFileSync(path.join(results, 'latest.md'), renderMarkdown(report));
  fs.writeFileSync(path.join(results, 'latest.svg'), renderSvg(report));
  // Floors measured now replace the previous ones of this mode; floors not measured in this run (--only) stay.
  const measured = floorsOf(report);
  history[mode] = { startedAt: measured.startedAt, floors: { ...previous?.floors, ...measured.floors } };
  fs.writeFileSync(floorsFile, `${JSON.stringify(history, null, 2)}\n`);
  const j = reportJson(report) as { pass: number; miss: number };
  process.stdout.write(
    `\n${j.pass} pass, ${j.miss} miss; wrote bench/results/latest.json, latest.md, latest.svg (${Math.round(report.seconds)} s)\n`,
  );
}

await main();
