import { z } from 'zod';
import { definitionBase, tableName } from '../../definition-base.ts';
import { ownRecord } from '../../../sqlite/index.ts';

const mapColumn = z.union([
  z.string().min(1).describe('a source column to copy (and rename)'),
  z.strictObject({ from: z.string().min(1) }),
  z.strictObject({
    expr: z.string().min(1).describe('a deterministic SQL expression over the source columns'),
    type: z
      .string()
      .regex(/^[A-Za-z ()0-9,]*$/)
      .optional(),
    collate: z.enum(['BINARY', 'NOCASE', 'RTRIM']).optional(),
  }),
]);

/** A map's definition. */
export const mapDefinitionSchema = z.strictObject({
  ...definitionBase,
  kind: z.literal('map'),
  /** Target column name -> source column, or computed expression. Order is the target column order. (ownRecord: a column named __proto__ is kept.) */
  columns: ownRecord(tableName, mapColumn, { nonEmpty: 'a map needs at least one column' }),
  /** Rows for which this SQL expression is true (WHERE semantics). */
  filter: z.string().min(1).optional(),
});
