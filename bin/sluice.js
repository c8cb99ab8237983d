#!/usr/bin/env node
// The sluice CLI. Runs the build (dist/, made by `npm run build`, which
// `npm ci` runs through `prepare`): the bundle dist/cli/main.js, else the
// compiled modules dist/src/cli/main.js (a build from before the bundle, or
// one whose bundle step failed); falls back to the TypeScript sources
// through tsx when there is no build (a fresh checkout mid-edit) or when
// SLUICE_FROM_SOURCE is set.
import fs from 'node:fs';

const builds = [new URL('../dist/cli/main.js', import.meta.url), new URL('../dist/src/cli/main.js', import.meta.url)];
const built = process.env.SLUICE_FROM_SOURCE === undefined ? builds.find((u) => fs.existsSync(u)) : undefined;
let main;
if (built !== undefined) {
  ({ main } = await import(built.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli/main.ts'));
}
process.exitCode = await main(process.argv);
// The command has returned (failed, done, or stopped on a signal): nothing
// is left to do, and its output is out. A handle left open must not keep the
// process, and the user's shell or a service manager, waiting: the NATS
// client keeps the socket of a server that never answered as NATS (an HTTP
// port given as --nats, or as a pipeline file's publish) after its connect
// timeout. A process with nothing open ends before this timer, which keeps
// nothing alive. Output still queued for a slow reader (a pipe on Windows is
// written asynchronously) is waited for: an exit would cut it short.
const exitOnceFlushed = () => {
  if (process.stdout.writableLength > 0 || process.stderr.writableLength > 0) globalThis.setTimeout(exitOnceFlushed, 100).unref();
  else process.exit();
};
globalThis.setTimeout(exitOnceFlushed, 1000).unref();
