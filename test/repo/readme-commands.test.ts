// the readme commands are the ones the test suite and ci run
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { test, expect, describe, ROOT } from '../support/fixtures.ts';
import { runCliAsync } from '../cli/support/cli.ts';

const read = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8');

/** The commands of a shell text: no comments, no blank lines, no `set`/`cd`/`if` plumbing. */
function commands(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.replace(/(^|\s)#.*$/, '').trim())
    .filter((l) => l !== '');
}

describe('the README, the test script and CI agree', () => {
  test('the README opens with the two commands: set up and run the demo, set up and run the tests', () => {
    const readme = read('README.md');
    const first = /```(?:sh|bash|shell)?\n([\s\S]*?)```/.exec(readme);
    expect(first, 'the README has a code block').not.toBeNull();
    // Nothing but the title comes before it.
    expect(readme.slice(0, first?.index).trim()).toMatch(/^# sluice$/);
    expect(commands(first?.[1] ?? '')).toEqual(['npm ci && npx sluice demo', 'npm ci && npm test']);
  });

  test("npm test is the type check, the lint (types and layer boundaries), the format check and the whole vitest suite, and `npx sluice` is this package's bin", () => {
    const pkg = JSON.parse(read('package.json')) as { name: string; scripts: Record<string, string>; bin: Record<string, string> };
    // The type check, the lint and the format check keep what they found for files that did not change
    // (tsconfig.json's incremental state, --cache), so a second run checks only what changed.
    expect(pkg.scripts.test).toBe(
      'tsc --noEmit && eslint --cache --cache-location node_modules/.cache/eslint/ . && prettier --check --cache . && vitest run',
    );
    expect(fs.existsSync(path.join(ROOT, 'eslint.config.js'))).toBe(true);
    expect(pkg.name).toBe('sluice');
    expect(pkg.bin.sluice).toBe('bin/sluice.js');
    expect(fs.existsSync(path.join(ROOT, pkg.bin.sluice as string))).toBe(true);
    // `npm ci` builds dist/ (prepare), which the bin runs.
    expect(pkg.scripts.prepare).toBe('npm run build');
    expect(pkg.scripts.demo).toBe('node bin/sluice.js demo');
    // vitest run picks up this very suite.
    expect(read('vitest.config.ts')).toContain("include: ['test/**/*.test.ts']");
  });

  test('.ci/run installs with npm ci and then runs npm test', () => {
    const lines = commands(read('.ci/run'));
    const ci = lines.findIndex((l) => /^npm ci( |$)/.test(l));
    const t = lines.findIndex((l) => l === 'npm test');
    expect(ci).toBeGreaterThanOrEqual(0);
    expect(t).toBeGreaterThan(ci);
    // After it, only the same suite on Node 22 and 24 (docs/node-support.md): under set -e, any failing run fails the job.
    const rest = lines.slice(t + 1);
    expect(rest[0]).toBe('for major in 22 24; do');
    expect(rest.at(-1)).toBe('done');
    expect(rest.filter((l) => /\bnpm test$/.test(l))).toEqual(['PATH="$nodedir/bin:$PATH" npm test']);
    expect(lines).toContain('set -euo pipefail');
  });

  test('the CI workflow runs npm ci, then npm test, then the demo', () => {
    const steps = [...read('.github/workflows/ci.yml').matchAll(/^\s*-?\s*run:\s*(.+)$/gm)].map((m) => (m[1] as string).trim());
    const ci = steps.indexOf('npm ci');
    const t = steps.indexOf('npm test');
    expect(ci).toBeGreaterThanOrEqual(0);
    expect(t).toBeGreaterThan(ci);
    expect(steps.indexOf('npm run demo')).toBeGreaterThan(t);
  });

  // npx reads the whole installed tree (and links this package into its cache the first time), as for a user:
  // seconds of npm's own work alone, several times that beside other work (the timeout at the end).
  test('`npx sluice` resolves to this CLI', async () => {
    const r = await new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        'npx',
        ['--no-install', 'sluice', '--version'],
        { cwd: ROOT, encoding: 'utf8', shell: process.platform === 'win32' },
        (err, stdout, stderr) => resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr }),
      );
    });
    expect(r.status, r.stderr).toBe(0);
    const direct = await runCliAsync(['--version']);
    expect(r.stdout.trim()).toBe(direct.stdout.trim());
    expect(r.stdout.trim()).toBe((JSON.parse(read('package.json')) as { version: string }).version);
  }, 120_000);
});
