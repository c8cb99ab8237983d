import http from 'node:http';
import { listenOn, statusPageHtml, STATUS_PAGE_CSP } from '../index.ts';
import type { Pipeline } from '../index.ts';
import type { PartKind } from './part.ts';

/*
 * The HTTP server of `sluice run` on the file's `listen` (loopback unless
 * it says otherwise; no authentication: docs/deploy.md puts it behind a
 * proxy): /healthz (RunStatus JSON, 200 when ok, else 503), /metrics
 * (Prometheus text) and / (the status page). It runs on the main thread,
 * which no target's work blocks (each has its own thread), and reads health
 * only (cached by the runner).
 */

type Listen = NonNullable<Pipeline['listen']>;

/** What to do about a `listen` address that cannot be bound. */
export const LISTEN_FIX = 'Free the port or change "listen" in the pipeline file.';

export const httpPart: PartKind<Listen> = {
  kind: 'http',
  configs: (pipeline) => (pipeline.listen === undefined ? [] : [pipeline.listen]),
  name: (l) => `${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port}`,
  fingerprint: (l) => `${l.host}:${l.port}`,
  async run(at, ctx) {
    const server = http.createServer((req, res) => {
      const url = (req.url ?? '').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' }).end('only GET\n');
        return;
      }
      try {
        if (url === '/healthz') {
          const s = ctx.shared.status();
          res.writeHead(s.code, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(`${JSON.stringify(s.body)}\n`);
        } else if (url === '/metrics') {
          ctx.shared.metrics().then(
            (m) => res.writeHead(200, { 'content-type': m.contentType }).end(m.text),
            (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
          );
        } else if (url === '/') {
          res
            .writeHead(200, {
              'content-type': 'text/html; charset=utf-8',
              'cache-control': 'no-store',
              'content-security-policy': STATUS_PAGE_CSP,
              'x-content-type-options': 'nosniff',
            })
            .end(statusPageHtml());
        } else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: /healthz, /metrics, or the status page at /\n');
      } catch (err) {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`);
      }
    });
    await listenOn(server, at, 'listen', LISTEN_FIX);
    // The port bound, which listen: HOST:0 leaves to the system.
    const bound = server.address();
    const port = typeof bound === 'object' && bound !== null ? bound.port : at.port;
    ctx.log('info', 'start', `serving /healthz, /metrics and the status page on http://${httpPart.name({ ...at, port })}/`, { port });
    ctx.ok();
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  },
};
