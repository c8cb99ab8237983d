// --nats pointing at a port another service answers (an HTTP server): one line, exit 1, and the process ends
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, expectOneLineError, startCli } from './support/cli.ts';

/*
 * A NATS client connecting to a server that never says INFO (an HTTP
 * server, the wrong port of a host) gives up after its connect timeout, but
 * leaves the socket open (@nats-io/transport-node 3.4 closes a transport
 * only once it has connected). publish and subscribe printed their
 * BROKER_UNREACHABLE line and then never ended, holding the user's shell
 * until the other side closed the connection. A failed command now ends
 * once its line is out.
 */

let dir: string;
let server: http.Server;
let url: string;

beforeAll(async () => {
  dir = makeDir();
  // Accepts the connection and answers nothing until a request comes, as an HTTP server does.
  server = http.createServer((_req, res) => res.end('not NATS\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `nats://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  removeDir(dir);
});

/** Runs the CLI; kills it when it has not ended 60 s after it started (far past the client's 5 s connect timeout). */
async function runEnding(args: readonly string[]): Promise<{ status: number | null; stderr: string; stdout: string; killed: boolean }> {
  const child = startCli(args);
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.child.kill('SIGKILL');
  }, 60_000);
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
});
