// sluice run stops with 0 on a SIGTERM, and lives through a SIGHUP, sent while the CLI loads
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe, filesIn } from '../../support/fixtures.ts';
import { scalar, startCliHeldAtImport, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, put, startRun, waitFor, waitHealth } from '../support/run.ts';

/*
 * bin/sluice.js imports the CLI's build (about 0.4 s) before `run` installs
 * its handlers: a SIGHUP then (`systemctl reload` right after the start)
 * ended the process with 129, which systemd counts as clean, and a SIGTERM
 * with 143, where docs/cli.md promises 0. The import is held 2 s here (a
 * module hook), and the signal sent 0, 50, 150 and 300 ms into it. On Node 24
 * the hold blocks the main thread, as compiling the build does: the signal
 * is then queued, not dispatched, until the import is done.
 */

const HOLD_MS = 2000;
const DELAYS_MS = [0, 50, 150, 300];

let running: Spawned | undefined;
afterEach(() => kill(running));

const pipeline = (port: number) => `sources:
  - path: app.db
    capture: [issues, comments]
    targets:
      - {path: cache.db, projections: ["*"]}
listen: 127.0.0.1:${port}
`;

/** An app's source in `tmp`/app with a pipeline file of one target (cache.db, "*") listening on a free port, and a folder for the hooks. */
async function appPipeline(tmp: string): Promise<{ dir: string; hooks: string; config: string; port: number }> {
  const dir = path.join(tmp, 'app');
  fs.mkdirSync(dir);
  appSource(path.join(dir, 'app.db'));
  const config = path.join(dir, 'sluice.yml');
  const port = await freePort();
  put(config, pipeline(port));
  return { dir, hooks: path.join(tmp, 'hooks'), config, port };
}

/** `run --config FILE --log json` with the CLI's import held; resolves once the signal went `delayMs` into that import. */
async function runSignalledWhileLoading(config: string, hooks: string, signal: NodeJS.Signals, delayMs: number): Promise<Spawned> {
  fs.rmSync(hooks, { recursive: true, force: true });
  fs.mkdirSync(hooks);
  const r = startCliHeldAtImport(['run', '--config', config, '--log', 'json'], hooks, HOLD_MS);
  running = r;
  await waitFor('the CLI importing its build', () => fs.existsSync(r.marker), 30_000, 5);
  if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
  r.child.kill(signal);
  return r;
}

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a SIGTERM or SIGINT while the CLI loads exits 0 having started nothing, and the next run converges', async ({ tmp }) => {
    const { dir, hooks, config, port } = await appPipeline(tmp);
    const before = filesIn(dir);
    for (const [signal, delayMs] of [...DELAYS_MS.map((d) => ['SIGTERM', d] as const), ['SIGINT', 150] as const]) {
      const r = await runSignalledWhileLoading(config, hooks, signal, delayMs);
      const what = `${signal} ${delayMs} ms into the import`;
      expect(await r.exited, what).toEqual({ status: 0, signal: null });
      const lines = r
        .stderr()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { event: string; msg: string });
      expect(lines, what).toEqual([expect.objectContaining({ event: 'stopped', msg: `${signal} before the start: nothing was started` })]);
      // Nothing written: no capture enabled, no lock, no target.
      expect(filesIn(dir), what).toEqual(before);
    }

    running = startRun(config);
    await waitHealth(port, 'the run after them built its target', (h) => h.code === 200);
    for (const t of ['issues', 'comments'])
      expect(scalar(path.join(dir, 'cache.db'), `SELECT count(*) FROM ${t}`), t).toBe(
        scalar(path.join(dir, 'app.db'), `SELECT count(*) FROM ${t}`),
      );
    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ status: 0, signal: null });
  }, 120_000);

  test('a SIGHUP while the CLI loads does not end it: it starts, builds, and exits 0 on SIGTERM', async ({ tmp }) => {
    const { dir, hooks, config, port } = await appPipeline(tmp);
    for (const delayMs of DELAYS_MS) {
      const what = `SIGHUP ${delayMs} ms into the import`;
      const r = await runSignalledWhileLoading(config, hooks, 'SIGHUP', delayMs);
      await Promise.race([
        waitHealth(port, `the pipeline built after a ${what}`, (h) => h.code === 200),
        r.exited.then((e) => {
          throw new Error(`${what}: the process ended (${JSON.stringify(e)})`);
        }),
      ]);
      expect(r.child.exitCode, what).toBeNull();
      expect(scalar(path.join(dir, 'cache.db'), 'SELECT count(*) FROM issues'), what).toBe(
        scalar(path.join(dir, 'app.db'), 'SELECT count(*) FROM issues'),
      );
      // Not a reload: the start read the file after it.
      expect(r.stderr(), what).not.toContain('"event":"reload"');
      r.child.kill('SIGTERM');
      expect(await r.exited, what).toEqual({ status: 0, signal: null });
    }
  }, 120_000);
});
