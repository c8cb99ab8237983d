import type { ProjectionDefinition } from '../projection/index.ts';
import type { NatsConnection } from '../broker/connection/index.ts';
import type { ReasonCode } from '../reasons.ts';
import type { CaptureMode } from '../capture/index.ts';

/** How to reach NATS: servers, login, TLS files (absolute); what publish and subscribe take (src/broker/connection.ts). */
export type { NatsAuth, NatsConnection, NatsTls } from '../broker/connection/index.ts';

/*
 * A pipeline as sluice runs it: a pipeline file (schema.ts) read and
 * checked by load.ts, with every shorthand spelt out and every path
 * absolute. `declaredAt` ("FILE:LINE:COL") lets a later refusal point at
 * the line that declared the thing.
 */

export interface Pipeline {
  /** The pipeline file, absolute. */
  readonly file: string;
  readonly sources: readonly PipelineSource[];
  readonly subscriptions: readonly PipelineSubscription[];
  /** Where /metrics, /healthz and the status page are served; none when the file has no `listen`. */
  readonly listen: { readonly host: string; readonly port: number } | undefined;
  /** Whether what is no longer declared is dropped and forgotten (else only reported). */
  readonly prune: boolean;
}

export interface CapturedTable {
  readonly table: string;
  readonly mode: CaptureMode;
  /** Columns to leave out of capture; undefined when the file does not say (the table keeps the set it has). */
  readonly exclude?: readonly string[];
  /**
   * Columns new since the table was armed to capture (enable --include):
   * while the table leaves out a column it had then, a new column may be
   * that one renamed, and run re-arms it only once each new column is named
   * here or in `exclude`. Undefined when the file does not say.
   */
  readonly include?: readonly string[];
  readonly declaredAt: string;
}

export interface PipelineSource {
  readonly path: string;
  readonly declaredAt: string;
  readonly capture: readonly CapturedTable[];
  readonly targets: readonly PipelineTarget[];
  /** Publish this source to NATS JetStream. */
  readonly publish?: NatsConnection;
  /** The formats each batch is published in (default: JSONL only). */
  readonly publishFormats?: readonly ('jsonl' | 'segment')[];
}

export interface HealthBounds {
  readonly maxLagEvents?: number | undefined;
  readonly maxLagMs?: number | undefined;
  /** sluice run: a pass of the target in flight this long without committing a batch is stalled (/healthz 503). Default STALLED_PASS_MS. */
  readonly maxPassMs?: number | undefined;
}

export interface PipelineTarget {
  readonly path: string;
  readonly declaredAt: string;
  readonly projections: readonly ProjectionEntry[];
  readonly health: HealthBounds;
}

export interface PipelineSubscription {
  /** How to reach NATS. */
  readonly nats: NatsConnection;
  /** `nats.servers`, as first declared here. */
  readonly servers: readonly string[];
  readonly sourceId: string;
  /** The batches applied: JSONL, or segments (the publisher must publish them). */
  readonly format: 'jsonl' | 'segment';
  readonly path: string;
  readonly declaredAt: string;
  readonly projections: readonly ProjectionEntry[];
  readonly health: HealthBounds;
}

/**
 * A custom handler module that is there but failed to load, as a file
 * loaded with `handlerFailures: 'record'` keeps it (load.ts): its target
 * fails with it (`code`, `message`: the reason and the fix), the others run.
 */
export interface HandlerFailure {
  readonly projection: string;
  /** The module, an absolute file: URL. */
  readonly module: string;
  readonly code: ReasonCode;
  readonly message: string;
}

/** "*" (every captured table's mirror, tables captured later included), a definition file, or an inline definition. */
export type ProjectionEntry =
  | { readonly kind: 'all'; readonly declaredAt: string }
  | {
      readonly kind: 'file';
      readonly path: string;
      readonly declaredAt: string;
      readonly definitions: readonly ProjectionDefinition[];
      readonly failed?: readonly HandlerFailure[];
    }
  | {
      readonly kind: 'inline';
      readonly declaredAt: string;
      readonly definitions: readonly ProjectionDefinition[];
      readonly failed?: readonly HandlerFailure[];
    };
