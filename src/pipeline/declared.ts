import type { ProjectionDefinitionInput } from '../projection/definition.ts';
import type { ProjectionEntry } from './pipeline.ts';

/**
 * A declared target's projections as a sync takes them (SyncOptions.projections):
 * `"*"` stays `'*'` (a mirror of every captured images-mode table, tables
 * captured later included), and each definition file or inline entry gives
 * its definitions, in the file's order. `plan`, `health --config` and `run`
 * all read a target's declaration through this one function.
 */
export function declaredInputs(entries: readonly ProjectionEntry[]): (ProjectionDefinitionInput | '*')[] {
  return entries.flatMap((e): (ProjectionDefinitionInput | '*')[] => (e.kind === 'all' ? ['*'] : [...e.definitions]));
}
