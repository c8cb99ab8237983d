import { Counter, Gauge, Registry } from 'prom-client';
import fs from 'node:fs';
import { openDatabase } from '../index.ts';
import { readProjections } from '../internal.ts';
import type { SubscribedBatch } from '../broker/index.ts';
import { SluiceMetrics, type Scrapable } from './metrics.ts';
import type { NatsTarget } from '../broker/index.ts';

/*
 * Metrics of `publish --follow` and `subscribe --follow` (docs/metrics.md).
 * A subscriber reports per projection with sync's names (metrics.ts): its
 * counters move after each batch, by the projections whose cursor that batch
 * moved, and its lag is read from the stream at each scrape (it has no source
 * to ask). A publisher has no projections: its series are per stream.
 */

export const PUBLISH_METRIC_NAMES = {
  batches: 'sluice_published_batches_total',
  events: 'sluice_published_events_total',
  duplicates: 'sluice_published_duplicates_total',
  lastAck: 'sluice_last_ack_time_seconds',
} as const;

export class PublishMetrics implements Scrapable {
  readonly registry = new Registry();
  readonly #batches: Counter<'stream'>;
  readonly #events: Counter<'stream'>;
  readonly #duplicates: Counter<'stream'>;
  readonly #lastAck: Gauge<'stream'>;
  readonly #stream: string;

  constructor(stream: string) {
    this.#stream = stream;
    const registers = [this.registry];
    const labelNames = ['stream'] as const;
    this.#batches = new Counter({
      name: PUBLISH_METRIC_NAMES.batches,
      help: 'Batches the broker acknowledged to this process (duplicates included).',
      labelNames,
      registers,
    });
    this.#events = new Counter({
      name: PUBLISH_METRIC_NAMES.events,
      help: 'Events of the batches the broker acknowledged to this process.',
      labelNames,
      registers,
    });
    this.#duplicates = new Counter({
      name: PUBLISH_METRIC_NAMES.duplicates,
      help: 'Acknowledged batches the broker already had (same Nats-Msg-Id in its dedup window).',
      labelNames,
      registers,
    });
    this.#lastAck = new Gauge({
      name: PUBLISH_METRIC_NAMES.lastAck,
      help: 'When the broker last acknowledged a batch of this process (unix seconds).',
      labelNames,
      registers,
    });
    // Present from the start at 0, so rate() has a first sample.
    for (const c of [this.#batches, this.#events, this.#duplicates]) c.inc({ stream }, 0);
  }

  ack(a: { readonly events: number; readonly duplicate: boolean }): void {
    const stream = this.#stream;
    this.#batches.inc({ stream });
    this.#events.inc({ stream }, a.events);
    if (a.duplicate) this.#duplicates.inc({ stream });
    this.#lastAck.set({ stream }, Date.now() / 1000);
  }

  scrape(): Promise<string> {
    return this.registry.metrics();
  }
}

export interface SubscriberMetrics {
  readonly metrics: SluiceMetrics;
  /** subscribe()'s onBatch. */
  onBatch(b: SubscribedBatch): void;
  close(): Promise<void>;
}

/** The projections of `sourceId` in the target, or none if it does not exist yet. */
function projectionsOf(target: string, sourceId: string) {
  if (!fs.existsSync(target)) return [];
  const db = openDatabase(target, { readonly: true, role: 'target' });
  try {
    return readProjections(db, 'main').filter((p) => p.sourceId === sourceId);
  } finally {
    db.close();
  }
}

export async function subscriberMetrics(
  target: string,
  url: NatsTarget,
  options: { sourceId: string; stream?: string },
): Promise<SubscriberMetrics> {
  // Loaded here, not above: publish.ts imports this file, and every command's --help loads publish.ts.
  const { openStreamLag } = await import('../broker/index.ts');
  const lag = await openStreamLag(url, options);
  const metrics = new SluiceMetrics(async () => {
    const out = [];
    for (const p of projectionsOf(target, options.sourceId)) {
      const l = await lag.lag(p.seq);
      if (l !== undefined) out.push({ name: p.name, ...l });
    }
    return out;
  });
  const seqs = new Map(projectionsOf(target, options.sourceId).map((p) => [p.name, p.seq]));
  return {
    metrics,
    onBatch: (b) => {
      const now = Date.now();
      const projections = projectionsOf(target, options.sourceId).map((p) => {
        // Reported after its commit, maybe with the batches committed with it (subscribe.ts): counted when the
        // projection reached its end and had not been counted there yet.
        const before = seqs.get(p.name) ?? -1;
        const moved = b.applied && p.seq >= b.toSeq && before < b.toSeq;
        seqs.set(p.name, moved ? b.toSeq : Math.min(before, p.seq)); // lower: rebuilt from an older snapshot
        return {
          name: p.name,
          state: p.state,
          ...(p.reason === null ? {} : { reason: p.reason }),
          applied: moved ? b.events : 0,
          batches: moved ? 1 : 0,
          ...(moved ? { lastCommitMs: now } : {}),
        };
      });
      metrics.record({ projections });
    },
    close: () => lag.close(),
  };
}
