import { z } from 'zod';
import { definitionBase, tableName } from '../../definition-base.ts';
import type { ChangeEvent, Row } from '../../../feed/index.ts';

export interface CustomContext {
  /**
   * A Kysely instance bound to the target transaction (tables resolve in the
   * target database), for this call only: await every query (one run after
   * the call returned fails the batch, CUSTOM_HANDLER_LATE_WRITE). A
   * statement that would write the source fails it too (CUSTOM_WROTE_SOURCE).
   */
  readonly db: import('kysely').Kysely<any>;
  readonly projection: string;
  /**
   * The names to use for the tables the definition declares in "tables":
   * their own names, or while a rebuild builds beside them, the shadow's.
   * Empty when it declares none.
   */
  readonly tables: Readonly<Record<string, string>>;
}

export interface CustomHandler {
  /** Bump when the handler's output changes: it is part of the fingerprint. */
  readonly version?: string;
  /**
   * Receives the snapshot rows. Without "tables" in the definition: all of
   * them in one call, in the same target transaction as the starting cursor,
   * and it must replace any earlier state. With "tables": the tables named
   * by ctx.tables do not exist when a build starts (sluice drops them), and
   * init may be called more than once for one build, each time with the
   * next part of the rows (in key order, each in its own transaction): it
   * creates the tables if they are not there and adds the rows.
   */
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
  /**
   * The target tables the handler owns. sluice drops them on a rebuild and
   * on drop, builds a rebuild into shadow tables beside them in bounded
   * transactions and renames those in (ctx.tables gives the names to use).
   */
  tables: z
    .array(tableName)
    .min(1)
    .refine((t) => new Set(t.map((x) => x.toLowerCase())).size === t.length, 'each table once')
    .optional(),
  /**
   * The source columns the handler's output depends on (the key is always
   * included). Given, an update that changes none of them is not passed to
   * the handler; left out, every event is. Names are checked against the
   * source table when the projection is compiled.
   */
  reads: z
    .array(z.string().min(1))
    .refine((r) => new Set(r.map((x) => x.toLowerCase())).size === r.length, 'each column once')
    .optional(),
  handler: z
    .custom<CustomHandler>((h) => typeof h === 'object' && h !== null && typeof (h as { apply?: unknown }).apply === 'function')
    .optional(),
});
