import type { DroppedIndex } from '../target/user-indexes.ts';
import type { Suspension } from './applier.ts';
import type { BuildCandidate, BuildState } from '../rebuild/shadow-build.ts';

/** The outcome of one transaction for one projection. */
export type StepOutcome =
  | {
      readonly kind: 'initialized';
      readonly rows: number;
      readonly seq: number;
      readonly cursor: string;
      readonly reason?: string;
      readonly droppedIndexes?: readonly DroppedIndex[];
      /** Built beside the live projection in bounded steps and swapped in (a protected rebuild), not in one transaction. */
      readonly swapped?: true;
    }
  | {
      readonly kind: 'applied';
      /** Events applied (net transitions for the set-based kinds). */
      readonly events: number;
      readonly seq: number;
      readonly cursor: string;
      readonly caughtUp: boolean;
      /** Events of the source's journal the batch handed over (StepContext.progress asks for it). */
      readonly sourceEvents?: number;
    }
  | { readonly kind: 'current'; readonly seq: number; readonly cursor: string }
  /** A protected rebuild went one step further (shadow-build.ts): the live projection is as it was. */
  | { readonly kind: 'building'; readonly phase: 'copy' | 'catch-up' | 'fill' | 'replay'; readonly rows: number; readonly seq: number }
  /** A protected rebuild's copy is caught up: validate `candidate` (in a read transaction), then step again with the result. Nothing was written. */
  | { readonly kind: 'validate'; readonly build: BuildState; readonly tid: number; readonly candidate: BuildCandidate }
  | Suspension;
