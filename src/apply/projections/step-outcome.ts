import type { DroppedIndex, DroppedTrigger } from '../target/index.ts';
import type { Suspension } from './applier.ts';

/** The outcome of one step for one projection (step.ts): what its target transaction did. */
export type StepOutcome =
  | {
      readonly kind: 'initialized';
      readonly rows: number;
      readonly seq: number;
      readonly cursor: string;
      readonly reason?: string;
      readonly droppedIndexes?: readonly DroppedIndex[];
      readonly droppedTriggers?: readonly DroppedTrigger[];
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
  | Suspension;
