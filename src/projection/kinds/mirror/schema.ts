import { z } from 'zod';
import { definitionBase } from '../../definition-base.ts';

/** A mirror's definition. */
export const mirrorDefinitionSchema = z.strictObject({ ...definitionBase, kind: z.literal('mirror') });
