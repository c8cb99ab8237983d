import net from 'node:net';
import { SluiceError } from '../errors.ts';

/**
 * Binds `server` to HOST:PORT, or rejects with METRICS_LISTEN_FAILED naming
 * the address, why it could not be bound, and `fix` (what to change: the
 * flag or the pipeline file's `listen`). One wording for every listener:
 * `--metrics` of the followers and `listen` of `sluice run`.
 */
export async function listenOn(
  server: net.Server,
  at: { readonly host: string; readonly port: number },
  what: string,
  fix: string,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why =
        err.code === 'EADDRINUSE'
          ? 'the port is in use by another process'
          : err.code === 'EACCES'
            ? 'this user may not bind that port'
            : err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND'
              ? 'that host is not an address of this machine'
              : err.message;
      reject(
        new SluiceError('METRICS_LISTEN_FAILED', `Cannot ${what} on ${at.host}:${at.port}: ${why} (${err.code ?? 'error'}). ${fix}`, {
          cause: err,
        }),
      );
    });
    server.listen(at.port, at.host, () => resolve());
  });
}

/**
 * Whether HOST:PORT can be bound now: binds it and lets go, or rejects as
 * listenOn does. `sluice run` asks before it starts anything, so a port in
 * use is refused at start (exit 1) instead of retried while the targets run
 * and another process answers /healthz.
 */
export async function probeListen(at: { readonly host: string; readonly port: number }, what: string, fix: string): Promise<void> {
  const server = net.createServer();
  await listenOn(server, at, what, fix);
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
