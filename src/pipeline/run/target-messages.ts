import type { MetricsRecord } from '../index.ts';
import type { LogLevel } from './log.ts';
import type { HeldShm } from '../../sqlite/index.ts';

/* What a target's worker thread (target-worker.ts) and its part (target-part.ts) say to each other. */

export interface TargetWorkerData {
  readonly pipelineFile: string;
  readonly target: string;
  /** A target of a declared source (followed by sync), or of a `subscribe` entry (fed by the broker). */
  readonly via: 'sync' | 'subscribe';
  /** The `-shm` descriptors the main thread holds for its databases, lent: used, never closed (sqlite/shm-files.ts). */
  readonly shm: readonly HeldShm[];
}

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
