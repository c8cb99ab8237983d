import { z } from 'zod';
import { definitionBase } from '../../definition-base.ts';
import type { ChangeEvent, Row } from '../../../feed/events.ts';

export interface CustomContext {
  /** A Kysely instance bound to the target transaction (tables resolve in the target database). */
  readonly db: import('kysely').Kysely<any>;
  readonly projection: string;
}

export interface CustomHandler {
  /** Bump when the handler's output changes: it is part of the fingerprint. */
  readonly version?: string;
  /** Receives the snapshot rows, in the same target transaction as the starting cursor. */
  init?(rows: Iterable<Row>, ctx: CustomContext): void | Promise<void>;
  /** Receives each event in seq order. A thrown error rolls back the whole batch. */
  apply(event: ChangeEvent, ctx: CustomContext): void | Promise<void>;
}

export const customDefinitionSchema = z.strictObject({
  ...definitionBase,
  kind: z.literal('custom'),
  /** Module (relative to the definition file) whose default export is a CustomHandler. */
  module: z.string().min(1).optional(),
  /** Set by loadDefinitions: the definition file a handler was declared in, so later runs can load it again. */
  definedIn: z.string().min(1).optional(),
  handler: z
    .custom<CustomHandler>((h) => typeof h === 'object' && h !== null && typeof (h as { apply?: unknown }).apply === 'function')
    .optional(),
});
