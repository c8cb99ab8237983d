import type { MetricsRecord } from '../index.ts';
import type { LogLevel } from './log.ts';
import type { HeldShm } from '../../sqlite/index.ts';

/* What a target's worker thread (target-worker.ts) and its part (target-part.ts) say to each other. */

export interface TargetWorkerData {
  readonly pipelineFile: string;
  readonly target: string;
  /** A target of a declared source (followed by sync), or of a `subscribe` entry (fed by the broker). */
  readonly via: 'sync' | 'subscribe';
  /** The `-shm` files of its databases that threads before it held, now its own to keep (sqlite/shm-files.ts). */
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
  /** Its last word: the `-shm` files it held, which its part keeps open for the next thread (sqlite/shm-files.ts). */
  | { readonly type: 'shm'; readonly files: readonly HeldShm[] };
