/*
 * The soak-like tests at their full counts (`npm run bench:soak-tests`):
 * `npx vitest run` with SLUICE_SOAK=1 over the test files that read it
 * (test/support/soak.ts), which in `npm test` run a smaller count (more
 * runs of a property, a longer time limit). Not part of `npm run bench`
 * (it is a test run, not a measurement): run it by hand, or in a nightly job.
 *
 *   npx tsx bench/soak-tests.ts [-- <more vitest args>]
 *
 * Exits with vitest's exit code.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Every test file that imports test/support/soak.ts (found by that import, so a new one needs no entry here). */
const files = fs
  .readdirSync(path.join(root, 'test'), { recursive: true, encoding: 'utf8' })
  .map((f) => `test/${f.split('\\').join('/')}`)
  .filter((f) => f.endsWith('.test.ts') && /from '[./]*support\/soak\.ts'/.test(fs.readFileSync(path.join(root, f), 'utf8')));

const dashes = process.argv.indexOf('--');
const more = dashes === -1 ? [] : process.argv.slice(dashes + 1);
console.info(`SLUICE_SOAK=1 vitest run over ${files.length} files:\n  ${files.join('\n  ')}`);
const r = spawnSync('npx', ['vitest', 'run', ...files, ...more], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, SLUICE_SOAK: '1' },
  shell: process.platform === 'win32',
});
process.exit(r.status ?? 1);
