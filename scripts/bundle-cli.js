// Bundles the CLI for `npm run build`, after tsc: dist/src/cli/main.js and
// everything it reaches (sluice's modules and the npm packages) into a few
// files in dist/cli/, which bin/sluice.js runs. A start of the CLI then
// reads a handful of files instead of a hundred modules and their packages,
// resolved one by one (docs/architecture.md, "Entries").
//
// - splitting: each command's module (main.ts loads them by import()) and
//   the broker (loaded by import() from cli/ and pipeline/) stay chunks of
//   their own, loaded only when used, so the NATS client is still loaded by
//   publish and subscribe alone.
// - `sluice run`'s worker thread is an entry too, dist/cli/target-worker.js,
//   beside the chunks: target-part.ts names it relative to its own module.
// - Left out, loaded from node_modules at run time: better-sqlite3 (a
//   native addon), the NATS client (@nats-io/*, the broker's), tsx (loaded
//   only to import a .ts definition or handler), and prom-client (required
//   through createRequire, which esbuild does not follow).
// - The banner gives the bundled CommonJS packages (commander...) a require.
// - No source maps: dist/**/*.map is not in the package.
// - Whitespace and syntax minified, names kept (stack traces and class names
//   read as in the sources): V8 parses every byte of a chunk a command loads
//   before it runs any of it, and the 2.5 MB became 1.8 MB, which took about
//   6% off a command's start on Node 20 (status: 0.16 s, of which Node itself
//   is 0.06 s).
// - zod's translations of its error messages (zod/v4/locales, 64 languages,
//   about 370 KB of the 1.3 MB chunk every command and every worker thread
//   of `sluice run` loads) are left out: `z` reaches them through a
//   namespace export (z.locales), which keeps all of them in the bundle
//   though sluice uses none (its schemas use zod's English messages, which
//   zod's schemas import on their own). Each thread that loads them pays
//   for them: bench/run.ts measured about 2.6 MB of RSS per thread (4 worker
//   threads importing the chunk: 140 MB with them, 130 MB without).
//
// The library entries (`sluice`, `sluice/broker`) are not bundled: they
// stay dist/src/, as tsc wrote them.
//
// Only files whose content changed are written, and files of an earlier
// bundle that this one no longer has (chunk names carry a hash) are removed.
import { Buffer } from 'node:buffer';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist', 'cli');

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: ['dist/src/cli/main.js', 'dist/src/pipeline/run/target-worker.js'],
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outdir,
  entryNames: '[name]',
  chunkNames: '[name]-[hash]',
  external: ['better-sqlite3', '@nats-io/*', 'tsx', 'tsx/*', 'prom-client'],
  banner: {
    js: "import { createRequire as __sluiceCreateRequire } from 'node:module';\nconst require = __sluiceCreateRequire(import.meta.url);",
  },
  sourcemap: false,
  legalComments: 'none',
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
  write: false,
  plugins: [
    {
      name: 'zod-english-only',
      setup(build) {
        build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
          contents: 'export { default as en } from "./en.js";\n',
          resolveDir: path.dirname(args.path),
        }));
      },
    },
  ],
});

fs.mkdirSync(outdir, { recursive: true });
const made = new Set();
for (const file of result.outputFiles) {
  made.add(path.basename(file.path));
  let same = false;
  try {
    same = Buffer.from(file.contents).equals(fs.readFileSync(file.path));
  } catch {
    same = false;
  }
  if (!same) fs.writeFileSync(file.path, file.contents);
}
for (const name of fs.readdirSync(outdir)) {
  if (!made.has(name)) fs.rmSync(path.join(outdir, name), { force: true, recursive: true });
}
