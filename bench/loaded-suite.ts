/*
 * The whole test suite on a loaded machine (issue 19, item 10): `npx vitest
 * run` beside CPU-bound busy loops (two by default, child processes that
 * spin until the suite ends), the way it runs on a shared 2-core machine.
 * It must pass there, within each test's timeout, as it does alone.
 *
 *   npm run bench:loaded [-- --loops N] [-- -- <vitest args, e.g. a path>]
 *
 * Prints the totals, the slowest 15 test files and the slowest 10 tests,
 * and every failure (file, test, the first line of its message); vitest's
 * own output goes to bench/out/loaded-suite.log, its JSON report to
 * bench/out/loaded-suite.json. Exits with vitest's exit code. Not part of
 * `npm run bench` (it runs the whole suite, several minutes).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'bench', 'out');

function parseArgs(argv: readonly string[]): { loops: number; vitest: string[] } {
  const dashes = argv.indexOf('--');
  const own = dashes === -1 ? argv : argv.slice(0, dashes);
  const vitest = dashes === -1 ? [] : argv.slice(dashes + 1);
  let loops = 2;
  for (let i = 0; i < own.length; i++) {
    if (own[i] === '--loops' && /^[0-9]+$/.test(own[i + 1] ?? '')) loops = Number(own[++i]);
    else throw new Error(`unknown argument ${own[i]}: --loops N, then -- and vitest's arguments`);
  }
  return { loops, vitest };
}

interface AssertionResult {
  readonly title: string;
  readonly ancestorTitles: readonly string[];
  readonly status: string;
  readonly duration?: number | null;
  readonly failureMessages: readonly string[];
}

interface FileResult {
  readonly name: string;
  readonly status: string;
  readonly startTime: number;
  readonly endTime: number;
  readonly message?: string;
  readonly assertionResults: readonly AssertionResult[];
}

interface JsonReport {
  readonly numTotalTests: number;
  readonly numPassedTests: number;
  readonly numFailedTests: number;
  readonly numPendingTests: number;
  readonly testResults: readonly FileResult[];
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const firstLine = (s: string) => (s.split('\n').find((l) => l.trim() !== '') ?? '').trim().slice(0, 160);
const rel = (f: string) => path.relative(root, f);

/** A process that spins on one core until it is killed. */
function busyLoop(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

async function main(): Promise<number> {
  const { loops, vitest } = parseArgs(process.argv.slice(2));
  fs.mkdirSync(out, { recursive: true });
  const logFile = path.join(out, 'loaded-suite.log');
  const jsonFile = path.join(out, 'loaded-suite.json');
  fs.rmSync(jsonFile, { force: true });

  const busy = Array.from({ length: loops }, busyLoop);
  const stopLoops = () => {
    for (const b of busy) if (b.exitCode === null && b.signalCode === null) b.kill('SIGKILL');
  };
  process.on('exit', stopLoops);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(130));

  const load0 = os.loadavg()[0] ?? 0;
  const t0 = performance.now();
  const log = fs.openSync(logFile, 'w');
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${jsonFile}`, ...vitest], {
      cwd: root,
      stdio: ['ignore', log, log],
    });
    child.on('error', reject);
    child.on('close', (status, signal) => resolve(status ?? (signal === null ? 1 : 128)));
  });
  const wall = performance.now() - t0;
  const load1 = os.loadavg()[0] ?? 0;
  fs.closeSync(log);
  stopLoops();

  console.log(
    `the suite beside ${loops} busy loop${loops === 1 ? '' : 's'} on ${os.cpus().length} cores: vitest exit ${code}, ${seconds(wall)} wall (global setup included); 1-min load ${load0.toFixed(1)} at start, ${load1.toFixed(1)} at end`,
  );
  if (!fs.existsSync(jsonFile)) {
    console.log(`no JSON report (vitest failed before running the tests): see ${rel(logFile)}`);
    return code === 0 ? 1 : code;
  }
  const report = JSON.parse(fs.readFileSync(jsonFile, 'utf8')) as JsonReport;
  const files = report.testResults.map((f) => ({ ...f, ms: f.endTime - f.startTime }));
  const timeout = (a: AssertionResult) => a.failureMessages.some((m) => /timed out/i.test(m));
  const tests = files.flatMap((f) => f.assertionResults.map((a) => ({ file: f.name, a })));
  console.log(
    `files: ${files.filter((f) => f.status === 'passed').length} passed, ${files.filter((f) => f.status !== 'passed').length} failed; tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed (${tests.filter((t) => timeout(t.a)).length} on a timeout), ${report.numPendingTests} skipped; sum of file durations ${seconds(files.reduce((s, f) => s + f.ms, 0))}`,
  );

  console.log('\nslowest 15 files:');
  for (const f of [...files].sort((a, b) => b.ms - a.ms).slice(0, 15)) {
    const slowest = Math.max(0, ...f.assertionResults.map((a) => a.duration ?? 0));
    console.log(
      `  ${seconds(f.ms).padStart(8)}  ${f.status === 'passed' ? '    ' : 'FAIL'}  ${rel(f.name)} (${f.assertionResults.length} tests, slowest ${seconds(slowest)})`,
    );
  }
  console.log('\nslowest 10 tests:');
  for (const t of [...tests].sort((a, b) => (b.a.duration ?? 0) - (a.a.duration ?? 0)).slice(0, 10))
    console.log(`  ${seconds(t.a.duration ?? 0).padStart(8)}  ${path.basename(t.file)} > ${t.a.title.slice(0, 90)}`);

  const failed = tests.filter((t) => t.a.status === 'failed');
  const broken = files.filter((f) => f.status === 'failed' && f.assertionResults.every((a) => a.status !== 'failed'));
  console.log(`\nfailures: ${failed.length + broken.length === 0 ? 'none' : ''}`);
  for (const f of broken) console.log(`  ${rel(f.name)}: ${firstLine(f.message ?? 'failed outside its tests')}`);
  for (const t of failed)
    console.log(
      `  ${rel(t.file)} > ${[...t.a.ancestorTitles, t.a.title].join(' > ').slice(0, 120)}: ${firstLine(t.a.failureMessages[0] ?? '')}`,
    );
  console.log(`\n(vitest's output: ${rel(logFile)})`);
  return code;
}

process.exitCode = await main();
