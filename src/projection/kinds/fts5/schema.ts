import { z } from 'zod';
import { definitionBase } from '../../definition-base.ts';

/** An fts5 index's definition. */
export const fts5DefinitionSchema = z.strictObject({
  ...definitionBase,
  kind: z.literal('fts5'),
  /** Source columns to index. */
  columns: z.array(z.string().min(1)).min(1),
  /** `external`: a content table keeps the indexed values (snippet/highlight work). `none`: contentless index. */
  content: z.enum(['external', 'none']).default('external'),
  tokenize: z
    .string()
    .regex(/^[A-Za-z0-9_ '"]*$/)
    .optional(),
});
