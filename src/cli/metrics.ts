import http from 'node:http';
import { createRequire } from 'node:module';
import { InvalidArgumentError } from 'commander';
import type * as Prom from 'prom-client';
import type { Counter, Gauge, Registry } from 'prom-client';
import { health, SluiceError, type ProjectionHealth } from '../index.ts';

/*
 * The Prometheus metrics of a long-running command (`sync --follow`,
 * `subscribe --follow`; `publish --follow`'s are in broker-metrics.ts), served as text at /metrics by --metrics
 * HOST:PORT. Every name, type and label is here and in docs/metrics.md (a
 * test checks that every documented name is served). Counters count what
 * this process did; the lag gauges are read at each scrape by `health()`
 * itself, so `sluice health` and a scrape cannot disagree.
 */

export const METRIC_NAMES = {
  eventsApplied: 'sluice_events_applied_total',
  batches: 'sluice_batches_total',
  failures: 'sluice_failures_total',
  lagEvents: 'sluice_lag_events',
  lagMs: 'sluice_lag_ms',
  lastCommit: 'sluice_last_commit_time_seconds',
} as const;

/** What one pass reports per projection (a SyncReport's ProjectionReport fits). */
export interface MetricsRecord {
  readonly name: string;
  readonly state: string;
  readonly reason?: string;
  /** Events applied in this pass. */
  readonly applied: number;
  /** Target transactions committed in this pass. */
  readonly batches?: number;
  readonly lastCommitMs?: number;
  readonly error?: { readonly code: string };
}

/** Where the lag gauges come from at each scrape: by default `health(target)`; for a subscriber, its stream. */
export type LagSource = () =>
  | readonly Pick<ProjectionHealth, 'name' | 'lagEvents' | 'lagMs'>[]
  | Promise<readonly Pick<ProjectionHealth, 'name' | 'lagEvents' | 'lagMs'>[]>;

/** What serveMetrics serves: a registry, scraped on each request. */
export interface Scrapable {
  readonly registry: Registry;
  scrape(): Promise<string>;
}

/**
 * prom-client, loaded when the first metrics are made (--metrics): about
 * 60 ms of start-up that every other run of sync would pay for nothing. It
 * is CommonJS, so it is required synchronously.
 */
export const promClient = (): typeof Prom => createRequire(import.meta.url)('prom-client') as typeof Prom;

export class SluiceMetrics {
  readonly registry: Registry;
  readonly #applied: Counter<'projection'>;
  readonly #batches: Counter<'projection'>;
  readonly #failures: Counter<'projection' | 'reason'>;
  readonly #lagEvents: Gauge<'projection'>;
  readonly #lagMs: Gauge<'projection'>;
  readonly #lastCommit: Gauge<'projection'>;
  readonly #lagSource: LagSource;
  /** Each projection's suspension reason at its last pass: a suspension counts as a failure once, when it starts. */
  readonly #suspended = new Map<string, string | undefined>();

  constructor(lagSource: LagSource) {
    this.#lagSource = lagSource;
    const prom = promClient();
    this.registry = new prom.Registry();
    const registers = [this.registry];
    const labelNames = ['projection'] as const;
    this.#applied = new prom.Counter({
      name: METRIC_NAMES.eventsApplied,
      help: 'Events applied to the projection by this process.',
      labelNames,
      registers,
    });
    this.#batches = new prom.Counter({
      name: METRIC_NAMES.batches,
      help: 'Target transactions committed for the projection by this process (a snapshot or a batch of events).',
      labelNames,
      registers,
    });
    this.#failures = new prom.Counter({
      name: METRIC_NAMES.failures,
      help: 'Failed sync attempts of the projection (nothing of the batch committed), and suspensions when they start, by reason code (docs/reasons.md).',
      labelNames: ['projection', 'reason'],
      registers,
    });
    this.#lagEvents = new prom.Gauge({
      name: METRIC_NAMES.lagEvents,
      help: "Events of the projection's source table after its seq, as sluice health reports it (read at scrape time).",
      labelNames,
      registers,
    });
    this.#lagMs = new prom.Gauge({
      name: METRIC_NAMES.lagMs,
      help: 'How long the oldest unapplied event has waited, in ms, as sluice health reports it (read at scrape time; 0 when caught up).',
      labelNames,
      registers,
    });
    this.#lastCommit = new prom.Gauge({
      name: METRIC_NAMES.lastCommit,
      help: 'When this process last committed a target transaction for the projection (unix seconds).',
      labelNames,
      registers,
    });
  }

  /** Adds one pass's figures. */
  record(report: { readonly projections: readonly MetricsRecord[] }): void {
    for (const p of report.projections) {
      const projection = p.name;
      this.#applied.inc({ projection }, p.applied);
      this.#batches.inc({ projection }, p.batches ?? 0);
      if (p.lastCommitMs !== undefined) this.#lastCommit.set({ projection }, p.lastCommitMs / 1000);
      if (p.error !== undefined) this.#failures.inc({ projection, reason: p.error.code });
      const reason = p.state === 'suspended' ? (p.reason ?? 'SUSPENDED') : undefined;
      if (reason !== undefined && this.#suspended.get(projection) !== reason) this.#failures.inc({ projection, reason });
      this.#suspended.set(projection, reason);
    }
  }

  /** The Prometheus text, with the lag gauges read now. A lag that cannot be read (the target gone) is left out, not kept stale. */
  async scrape(): Promise<string> {
    this.#lagEvents.reset();
    this.#lagMs.reset();
    try {
      for (const p of await this.#lagSource()) {
        if (p.lagEvents !== null) this.#lagEvents.set({ projection: p.name }, p.lagEvents);
        if (p.lagMs !== null) this.#lagMs.set({ projection: p.name }, p.lagMs);
      }
    } catch {
      /* health fails on a damaged or deleted target (a subscriber's stream read, on a broker away); the follower reports that itself */
    }
    return this.registry.metrics();
  }
}

/** The metrics of a sync target: lag read by `health(target)`. */
export function targetMetrics(targetPath: string): SluiceMetrics {
  return new SluiceMetrics(() => health(targetPath).projections);
}

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
        new SluiceError(
          'METRICS_LISTEN_FAILED',
          `Cannot serve metrics on ${at.host}:${at.port}: ${why} (${err.code ?? 'error'}). Pass another --metrics HOST:PORT.`,
          { cause: err },
        ),
      );
    });
    server.listen(at.port, at.host, () => resolve());
  });
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
