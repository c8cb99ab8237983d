// --nats pointing at a port another service answers (an HTTP server): one line, exit 1, and the process ends
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, expectOneLineError, startCli, waitFor } from './support/cli.ts';

/*
 * A NATS client connecting to a server that never says INFO (an HTTP
 * server, the wrong port of a host) gives up after its connect timeout, but
 * leaves the socket open (@nats-io/transport-node 3.4 closes a transport
 * only once it has connected). publish and subscribe printed their
 * BROKER_UNREACHABLE line and then never ended, holding the user's shell
 * until the other side closed the connection; sluice run, publishing there,
 * logged "run stopped: every part stopped" on SIGTERM and went on running. A
 * command now ends once it has returned.
 */

let dir: string;
let server: net.Server;
const sockets = new Set<net.Socket>();
let url: string;

beforeAll(async () => {
  dir = makeDir();
  // Accepts the connection and never answers, nor closes it (a port of another service that waits for its client to speak).
  server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `nats://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
  removeDir(dir);
});

/** Runs the CLI; kills it when it has not ended 30 s after it started (far past the client's 5 s connect timeout). */
async function runEnding(args: readonly string[]): Promise<{ status: number | null; stderr: string; stdout: string; killed: boolean }> {
  const child = startCli(args);
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.child.kill('SIGKILL');
  }, 30_000);
  const { status } = await child.exited;
  clearTimeout(timer);
  return { status, stderr: child.stderr(), stdout: child.stdout(), killed };
}

describe('--nats at a port that is not a NATS server', () => {
  test('publish and subscribe fail with BROKER_UNREACHABLE naming the URL, and end', async () => {
    const src = trackerSource(path.join(dir, 'app.db'));
    const [pub, sub] = await Promise.all([
      runEnding(['publish', src, '--nats', url]),
      runEnding(['subscribe', path.join(dir, 'sub.db'), '--nats', url, '--source', 'x']),
    ]);
    for (const r of [pub, sub]) {
      expect(r.killed, `still running after its error: ${r.stderr}`).toBe(false);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'BROKER_UNREACHABLE');
      expect(r.stderr).toContain(url);
    }
  }, 120_000);

  test('sluice run publishing there stops on SIGTERM', async () => {
    const src = trackerSource(path.join(dir, 'run.db'), ['issues']);
    const config = path.join(dir, 'sluice.yml');
    fs.writeFileSync(
      config,
      `listen: "127.0.0.1:0"\nsources:\n  - path: run.db\n    capture: [issues]\n    publish:\n      nats: ${url}\n`,
    );
    expect(fs.existsSync(src)).toBe(true);
    const run = startCli(['run', '--config', config]);
    let killed = false;
    let timer: NodeJS.Timeout | undefined;
    try {
      await waitFor('a failed connection to be logged', () => run.stderr().includes('BROKER_UNREACHABLE'), 60_000);
      run.child.kill('SIGTERM');
      timer = setTimeout(() => {
        killed = true;
        run.child.kill('SIGKILL');
      }, 30_000);
      const exit = await run.exited;
      expect(killed, `still running after SIGTERM: ${run.stderr()}`).toBe(false);
      expect(exit, run.stderr()).toEqual({ status: 0, signal: null });
      expect(run.stderr()).toContain('run stopped');
    } finally {
      clearTimeout(timer);
      if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    }
  }, 180_000);
});
