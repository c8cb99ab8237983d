import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';
import type { Counter, Gauge, Registry } from 'prom-client';
import { health } from '../apply/check/index.ts';
import type { ProjectionHealth } from '../apply/check/index.ts';

/*
 * The Prometheus metrics of a long-running command (`sync --follow`,
 * `subscribe --follow`, and every target of `sluice run`, which labels them
 * by target too; `publish --follow`'s are in src/cli/broker-metrics.ts).
 * Every name, type and label is here and in docs/metrics.md (a test checks
 * that every documented name is served). Counters count what this process
 * did; the lag gauges are read at each scrape by `health()` itself, so
 * `sluice health` and a scrape cannot disagree.
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

/** One projection's lag at a scrape; `target` when the metrics are labelled by target (`sluice run`). */
export type LagFigure = Pick<ProjectionHealth, 'name' | 'lagEvents' | 'lagMs'> & { readonly target?: string };

/** Where the lag gauges come from at each scrape: by default `health(target)`; for a subscriber, its stream. */
export type LagSource = () => readonly LagFigure[] | Promise<readonly LagFigure[]>;

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
  readonly #applied: Counter;
  readonly #batches: Counter;
  readonly #failures: Counter;
  readonly #lagEvents: Gauge;
  readonly #lagMs: Gauge;
  readonly #lastCommit: Gauge;
  readonly #lagSource: LagSource;
  readonly #byTarget: boolean;
  /** Each projection's suspension reason at its last pass (by target and name): a suspension counts as a failure once, when it starts. */
  readonly #suspended = new Map<string, string | undefined>();

  /** `byTarget`: every metric has a `target` label too (one process serving several targets: `sluice run`). */
  constructor(lagSource: LagSource, options: { readonly byTarget?: boolean } = {}) {
    this.#lagSource = lagSource;
    this.#byTarget = options.byTarget === true;
    const prom = promClient();
    this.registry = new prom.Registry();
    const registers = [this.registry];
    const labelNames = this.#byTarget ? ['target', 'projection'] : ['projection'];
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
      labelNames: [...labelNames, 'reason'],
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

  /** Adds one pass's figures (of `target`, when labelled by target). */
  record(report: { readonly projections: readonly MetricsRecord[] }, target?: string): void {
    for (const p of report.projections) {
      const labels = this.#labels(p.name, target);
      this.#applied.inc(labels, p.applied);
      this.#batches.inc(labels, p.batches ?? 0);
      if (p.lastCommitMs !== undefined) this.#lastCommit.set(labels, p.lastCommitMs / 1000);
      if (p.error !== undefined) this.#failures.inc({ ...labels, reason: p.error.code });
      const reason = p.state === 'suspended' ? (p.reason ?? 'SUSPENDED') : undefined;
      const key = `${target ?? ''}\0${p.name}`;
      if (reason !== undefined && this.#suspended.get(key) !== reason) this.#failures.inc({ ...labels, reason });
      this.#suspended.set(key, reason);
    }
  }

  #labels(projection: string, target: string | undefined): Record<string, string> {
    return this.#byTarget ? { target: target ?? '', projection } : { projection };
  }

  /** The Prometheus text, with the lag gauges read now. A lag that cannot be read (the target gone) is left out, not kept stale. */
  async scrape(): Promise<string> {
    this.#lagEvents.reset();
    this.#lagMs.reset();
    try {
      for (const p of await this.#lagSource()) {
        const labels = this.#labels(p.name, p.target);
        if (p.lagEvents !== null) this.#lagEvents.set(labels, p.lagEvents);
        if (p.lagMs !== null) this.#lagMs.set(labels, p.lagMs);
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
