// a follower sent sigterm while the cli loads stops as on sigterm with exit 0
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { NatsServer } from '../support/nats-server.ts';
import { sourceIdOf } from '../broker/support/broker.ts';
import { runCliAsync, startCliHeldAtImport, trackerSource, waitFor, type Spawned } from './support/cli.ts';

/*
 * The follow loops (sync, export, publish and subscribe with --follow) stop
 * on SIGINT/SIGTERM with exit 0 and their last line, but their handlers are
 * installed by the command, after bin/sluice.js has imported the CLI's build
 * (about 0.4 s): a SIGTERM then (a service stopped right after its start)
 * ended the process with 143. The import is held 2 s here (a module hook)
 * and the SIGTERM sent 150 ms into it: each follower stops as on a SIGTERM
 * once running, exit 0.
 */

let server: NatsServer;
let running: Spawned | undefined;
beforeAll(async () => {
  server = await NatsServer.start();
}, 60_000);
afterAll(async () => {
  await server?.dispose();
});
afterEach(() => {
  if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
});

async function termWhileLoading(
  args: readonly string[],
  hooks: string,
): Promise<{ status: number | null; signal: string | null; out: string; err: string }> {
  fs.mkdirSync(hooks);
  const r = startCliHeldAtImport(args, hooks, 2000);
  running = r;
  await waitFor('the CLI importing its build', () => fs.existsSync(r.marker), 30_000, 5);
  await new Promise((resolve) => setTimeout(resolve, 150));
  r.child.kill('SIGTERM');
  const e = await r.exited;
  return { ...e, out: r.stdout(), err: r.stderr() };
}

describe.skipIf(process.platform === 'win32')('a follower sent SIGTERM while the CLI loads', () => {
  test('sync, export, publish and subscribe --follow each stop as on SIGTERM, exit 0', async ({ tmp }) => {
    const src = trackerSource(path.join(tmp, 'app.db'), ['comments']);
    const sid = sourceIdOf(src);
    // The stream exists (a publish), for the subscriber to find.
    const published = await runCliAsync(['publish', src, '--nats', server.url]);
    expect(published.status, published.stderr).toBe(0);

    const sync = await termWhileLoading(['sync', src, path.join(tmp, 'cache.db'), '--follow'], path.join(tmp, 'h1'));
    expect({ status: sync.status, signal: sync.signal }, sync.err).toEqual({ status: 0, signal: null });
    expect(sync.out).toContain('stopped by SIGTERM');

    const exported = await termWhileLoading(['export', src, '--out', path.join(tmp, 'app.jsonl'), '--follow'], path.join(tmp, 'h2'));
    expect({ status: exported.status, signal: exported.signal }, exported.err).toEqual({ status: 0, signal: null });
    expect(exported.out).toContain('exported 0 snapshot rows');

    const publish = await termWhileLoading(['publish', src, '--nats', server.url, '--follow'], path.join(tmp, 'h3'));
    expect({ status: publish.status, signal: publish.signal }, publish.err).toEqual({ status: 0, signal: null });
    expect(publish.out).toContain('stopped by SIGTERM');

    const subscribe = await termWhileLoading(
      ['subscribe', path.join(tmp, 'replica.db'), '--nats', server.url, '--source', sid, '--follow'],
      path.join(tmp, 'h4'),
    );
    expect({ status: subscribe.status, signal: subscribe.signal }, subscribe.err).toEqual({ status: 0, signal: null });
    expect(subscribe.out).toContain('stopped by SIGTERM');
  }, 120_000);
});
