import { z } from 'zod';
import { isProjectionName, PROJECTION_NAME_RULE } from './name.ts';

/*
 * What every kind's definition schema shares (each kind's own schema is in
 * its folder, kinds/<kind>/schema.ts, listed in kinds/registry.ts).
 */

const projectionName = z.string().min(1).refine(isProjectionName, PROJECTION_NAME_RULE);

export const tableName = z
  .string()
  .min(1)
  .refine(
    (s) => !s.toLowerCase().startsWith('_sluice_') && !s.toLowerCase().startsWith('sqlite_'),
    'names starting with _sluice_ or sqlite_ are reserved',
  );

export const definitionBase = {
  name: projectionName,
  /** Source table. */
  source: z.string().min(1),
  /** Target table in the target database. Default: the projection name (mirror: the source table name). */
  target: tableName.optional(),
};
