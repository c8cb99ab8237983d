#!/usr/bin/env node
// The sluice CLI. Runs the build (dist/, made by `npm run build`, which
// `npm ci` runs through `prepare`): the bundle dist/cli/main.js, else the
// compiled modules dist/src/cli/main.js (a build from before the bundle, or
// one whose bundle step failed); falls back to the TypeScript sources
// through tsx when there is no build (a fresh checkout mid-edit) or when
// SLUICE_FROM_SOURCE is set.
import fs from 'node:fs';

// `run` stops cleanly on SIGTERM/SIGINT (exit 0) and reloads on SIGHUP, and a
// follower (`sync`, `export`, `publish`, `subscribe` with --follow) stops
// cleanly on SIGTERM/SIGINT, but their handlers are installed by the command,
// once the import below is done (about 0.4 s): a signal before them would get
// its default action and end the process at once (exit 129 for a SIGHUP,
// which systemd counts as a clean stop; 143 for a SIGTERM). They are trapped
// here, before anything is imported, and what arrived is handed to the
// command's handlers as they are installed (takeEarlySignals in
// src/cli/interrupt.ts). Windows has no SIGHUP.
const FOLLOWERS = new Set(['sync', 'export', 'publish', 'subscribe']);
const command = process.argv[2];
const trapped =
  command === 'run'
    ? ['SIGINT', 'SIGTERM', ...(process.platform === 'win32' ? [] : ['SIGHUP'])]
    : FOLLOWERS.has(command) && process.argv.includes('--follow')
      ? ['SIGINT', 'SIGTERM']
      : [];
if (trapped.length > 0) {
  const received = [];
  const listeners = trapped.map((name) => [name, () => received.push(name)]);
  for (const [name, listener] of listeners) process.on(name, listener);
  globalThis[Symbol.for('sluice.earlySignals')] = {
    received,
    release: () => {
      for (const [name, listener] of listeners) process.off(name, listener);
    },
  };
}

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
// A signal that came while the import held the thread (compiling the build
// is synchronous) is queued, not yet dispatched to the trap: one turn of the
// event loop dispatches it, so the command finds it among the early signals
// rather than in its own handler after it has started.
if (trapped.length > 0) await new Promise((resolve) => globalThis.setImmediate(resolve));
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
