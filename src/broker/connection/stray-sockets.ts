import diagnostics from 'node:diagnostics_channel';
import type net from 'node:net';

/*
 * The NATS client (@nats-io/transport-node 3.x) leaves its socket open when
 * a server accepts the connection but never speaks NATS (another service on
 * the port, a proxy that holds the connection): its connect times out, and
 * its transport's close does nothing for a connection that never finished.
 * A supervised `sluice run` retries the broker with backoff for as long as
 * it runs, so each attempt kept a socket, until the process ran out of file
 * descriptors and every part of the pipeline failed with it. So a connect
 * notes the client sockets made while it runs (Node's `net.client.socket`
 * diagnostics channel) and, when it fails, destroys those still open. One
 * connect at a time in the process: the sockets a failed one destroys are
 * its own (sluice opens no other client sockets).
 */

const CHANNEL = 'net.client.socket';
let connecting: Promise<unknown> = Promise.resolve();

/** Runs `dial` (a connect of the NATS client); when it fails, the client sockets it opened are closed. */
export function closingStrays<T>(dial: () => Promise<T>): Promise<T> {
  const run = async (): Promise<T> => {
    const made: net.Socket[] = [];
    const onSocket = (message: unknown) => {
      const socket = (message as { socket?: net.Socket }).socket;
      if (socket !== undefined) made.push(socket);
    };
    diagnostics.subscribe(CHANNEL, onSocket);
    try {
      return await dial();
    } catch (err) {
      for (const s of made) if (!s.destroyed) s.destroy();
      throw err;
    } finally {
      diagnostics.unsubscribe(CHANNEL, onSocket);
    }
  };
  const next = connecting.then(run, run);
  connecting = next.catch(() => {});
  return next;
}
