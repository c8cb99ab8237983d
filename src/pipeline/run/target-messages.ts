import type { MetricsRecord, PipelineSource, PipelineSubscription, PipelineTarget } from '../index.ts';
import type { LogLevel } from './log.ts';
import type { HeldShm } from '../../sqlite/index.ts';

/* What a target's worker thread (target-worker.ts) and its part (target-part.ts) say to each other. */

/**
 * What a target's worker is started with: the declaration the runner
 * accepted (its last pipeline that loaded), never the pipeline file as it
 * is now, which may hold an edit the runner refused (config-invalid). Custom
 * handlers are functions, which cannot be sent to a thread: their
 * definitions come without them, and the thread imports their modules.
 */
export type TargetWorkerData = {
  /** Where the declaration was read, named in messages (the thread does not read it). */
  readonly pipelineFile: string;
  readonly target: string;
  /** The `-shm` descriptors the main thread holds for its databases, lent: used, never closed (sqlite/shm-files.ts). */
  readonly shm: readonly HeldShm[];
  /** Where the worker says when its pass in flight started or last committed (PassInFlight's buffer), read by its part. */
  readonly passes: SharedArrayBuffer;
} & (
  | {
      /** A target of a declared source, followed by sync. */
      readonly via: 'sync';
      /** Its source (the source's targets left out: `declared` is this one). */
      readonly source: PipelineSource;
      readonly declared: PipelineTarget;
      /** The file's `prune`. */
      readonly prune: boolean;
    }
  | {
      /** A target of a `subscribe` entry, fed by the broker. */
      readonly via: 'subscribe';
      readonly subscription: PipelineSubscription;
    }
);

export type ToWorker = { readonly type: 'stop' };

export type FromWorker =
  | {
      readonly type: 'log';
      readonly level: LogLevel;
      readonly event: string;
      readonly msg: string;
      readonly extra?: Record<string, unknown>;
    }
  | { readonly type: 'pass'; readonly projections: readonly MetricsRecord[] }
  | { readonly type: 'phase'; readonly phase: 'building' | 'following' }
  | { readonly type: 'failed'; readonly code: string; readonly message: string }
  /** A `-shm` descriptor it opened, the main thread's from now on (sqlite/shm-files.ts): closed once its file is replaced. */
  | { readonly type: 'shm'; readonly files: readonly HeldShm[] };
