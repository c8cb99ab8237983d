import http from 'node:http';
import { InvalidArgumentError } from 'commander';
import { listenOn, type Scrapable } from '../internal.ts';

/*
 * --metrics HOST:PORT of a long-running command: the address, and the
 * server of /metrics. The metrics themselves are src/pipeline/metrics.ts
 * (shared with `sluice run`).
 */
export { METRIC_NAMES, SluiceMetrics, promClient, targetMetrics, type LagSource, type MetricsRecord, type Scrapable } from '../internal.ts';

export interface MetricsAddress {
  readonly host: string;
  readonly port: number;
}

/** commander parser for --metrics HOST:PORT (a bad value is a usage error, exit 2). */
export function parseMetricsAddress(value: string): MetricsAddress {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  const port = Number(m?.[2]);
  if (m === null || !(port >= 1 && port <= 65535))
    throw new InvalidArgumentError(`expected HOST:PORT with a port from 1 to 65535 (e.g. 127.0.0.1:9464), got "${value}"`);
  return { host: (m[1] as string).replace(/^\[(.*)\]$/, '$1'), port };
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Serves `metrics` at http://HOST:PORT/metrics; a port that cannot be bound is METRICS_LISTEN_FAILED (exit 1). */
export async function serveMetrics(metrics: Scrapable, at: MetricsAddress): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
      return;
    }
    metrics.scrape().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
    );
  });
  await listenOn(server, at, 'serve metrics', 'Pass another --metrics HOST:PORT.');
  server.unref(); // the follow loop, not the metrics server, keeps the process alive
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : at.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
