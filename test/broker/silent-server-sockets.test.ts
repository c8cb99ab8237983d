// a NATS URL that reaches a server which never speaks NATS: each failed connect closes its socket (a run that retries for hours keeps none)
import net from 'node:net';
import { test, expect, describe } from '../support/fixtures.ts';
import { connect } from '@nats-io/transport-node';
import { closingStrays } from '../../src/broker/connection/index.ts';

/*
 * The NATS client left its socket open when the server accepted the
 * connection and then said nothing (another service on the port): its
 * connect timed out, and nothing closed the socket. `sluice run` retries a
 * broker for as long as it runs, so each attempt kept a descriptor, until
 * the process had none left. Every connect of the broker goes through
 * closingStrays (src/broker/nats.ts). Here a TCP server that accepts and
 * stays silent counts the connections still open from its side: after each
 * failed connect (the client's timeout), none is.
 */

describe('connecting to a server that never speaks NATS', () => {
  test('each failed connect closes the socket it opened', { timeout: 30_000 }, async () => {
    const open = new Set<net.Socket>();
    let accepted = 0;
    const server = net.createServer((s) => {
      accepted++;
      open.add(s);
      s.on('error', () => {});
      s.on('end', () => s.destroy());
      s.on('close', () => open.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    try {
      for (let attempt = 1; attempt <= 2; attempt++) {
        await expect(
          closingStrays(() => connect({ servers: `127.0.0.1:${port}`, timeout: 500, maxReconnectAttempts: -1 })),
        ).rejects.toThrow(/timeout/i);
        // The client's end of the connection is closed: the server sees it end, at once.
        const deadline = Date.now() + 2000;
        while (open.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        expect(accepted).toBe(attempt);
        expect(open.size).toBe(0);
      }
    } finally {
      for (const s of open) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
