import { InvalidInputError } from '../errors.ts';
import { foldIdent } from '../sqlite/quote.ts';
import type { ProjectionDefinition } from './definition.ts';
import { definitionFingerprint } from './fingerprint.ts';
import type { CompiledProjection, SourceShape } from './compiled.ts';
import { KINDS, kindNamed } from './kinds/registry.ts';

export { definitionFingerprint } from './fingerprint.ts';

export {
  columnDecl,
  compiledAs,
  sourceShape,
  type CompiledCustom,
  type CompiledFts5,
  type CompiledMap,
  type CompiledMirror,
  type CompiledOf,
  type CompiledProjection,
  type SourceColumn,
  type SourceShape,
  type TargetColumn,
} from './compiled.ts';

/** Target tables a projection of this kind owns (so a rebuild may drop them). */
export function ownedTables(kind: string, targetTable: string): string[] {
  return kindNamed(kind)?.ownedTables(targetTable) ?? [];
}

/** Turns a definition into the columns, key and SQL a projection runs, against its source's shape. */
export function compileProjection(def: ProjectionDefinition, shape: SourceShape): CompiledProjection {
  // One kind's layout, for the definition of that kind.
  const layout = (KINDS[def.kind].layout as (d: ProjectionDefinition, s: SourceShape) => ReturnType<(typeof KINDS)['mirror']['layout']>)(
    def,
    shape,
  );
  const lower = new Set<string>();
  for (const c of layout.columns) {
    if (lower.has(foldIdent(c.name)))
      throw new InvalidInputError(
        'DUPLICATE_COLUMN',
        `Projection ${def.name}: target column ${c.name} appears twice. Give each target column a distinct name.`,
      );
    lower.add(foldIdent(c.name));
  }
  return {
    definition: def,
    name: def.name,
    kind: def.kind,
    source: shape,
    targetTable: layout.targetTable,
    columns: layout.columns,
    key: layout.key,
    filter: layout.filter,
    identity: layout.identity === true,
    fingerprint: definitionFingerprint(
      def,
      shape,
      (KINDS[def.kind].columnsRead as (d: ProjectionDefinition) => readonly string[] | undefined)(def),
    ),
    ...('handler' in def && def.handler !== undefined ? { handler: def.handler } : {}),
    ownedTables: KINDS[def.kind].ownedTables(layout.targetTable),
  } as CompiledProjection;
}
