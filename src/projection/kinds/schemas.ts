import { mirrorDefinitionSchema } from './mirror/schema.ts';
import { mapDefinitionSchema } from './map/schema.ts';
import { fts5DefinitionSchema } from './fts5/schema.ts';
import { customDefinitionSchema } from './custom/schema.ts';

/** Every kind's definition schema, one per kind of registry.ts (definition.ts makes them one discriminated union on `kind`). */
export const DEFINITION_SCHEMAS = [mirrorDefinitionSchema, mapDefinitionSchema, fts5DefinitionSchema, customDefinitionSchema] as const;
