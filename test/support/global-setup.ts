import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** What tsconfig.build.json compiles: every .ts under these folders becomes dist/<same path>.js. */
const BUILT = ['src', 'fixtures', 'projections'];

/** The .ts files under `dir` (relative to `root`), declaration files aside. */
function sources(root: string, dir: string): string[] {
  const full = path.join(root, dir);
  if (!fs.existsSync(full)) return [];
  return fs
    .readdirSync(full, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => path.join(dir, f));
}

/**
 * CLI tests run bin/sluice.js, which runs the compiled build in dist/. Build
 * it first, so no test ever runs a stale CLI. The build is incremental
 * (tsconfig.build.json keeps its state in dist/.tsbuildinfo): tsc compares
 * each source's content with the last build's and emits what changed, a few
 * seconds instead of a whole build when nothing did. tsc does not look at
 * its outputs, so when one of them is gone (a dist/ emptied by hand), the
 * state is dropped first and the build is whole again. Then the CLI's
 * bundle (dist/cli/, which bin/sluice.js runs first) is made again from
 * that build, as `npm run build` does: esbuild rewrites only the files
 * whose content changed.
 */
export default function setup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const missing = BUILT.flatMap((d) => sources(root, d)).some((f) => !fs.existsSync(path.join(root, 'dist', f.replace(/\.ts$/, '.js'))));
  if (missing) fs.rmSync(path.join(root, 'dist', '.tsbuildinfo'), { force: true });
  execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, [path.join(root, 'scripts', 'bundle-cli.js')], { cwd: root, stdio: 'inherit' });
}
