import { InvalidInputError } from '../errors.ts';
import { foldIdent } from '../sqlite/quote.ts';
import type { ProjectionDefinition } from './definition.ts';
import { createHash } from 'node:crypto';
import type { CustomHandler } from './definition.ts';
import type { CompiledProjection, SourceShape } from './compiled.ts';
import { KINDS, kindNamed } from './kinds/registry.ts';

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
    fingerprint: definitionFingerprint(def, shape),
    ...('handler' in def && def.handler !== undefined ? { handler: def.handler } : {}),
    ownedTables: KINDS[def.kind].ownedTables(layout.targetTable),
  } as CompiledProjection;
}

/**
 * The fingerprint stored with the cursor: the definition as data (not code,
 * except a custom handler's declared version) plus the part of the source
 * shape the projection reads. A map of plain columns (no computed column,
 * no filter) and an fts5 index read only the columns they name and the
 * key, so a column added, dropped or renamed beside them (sluice alter)
 * leaves the fingerprint as it was and the projection goes on; a mirror or
 * a custom projection reads every column, and sluice cannot tell which
 * columns an SQL expression reads, so theirs covers the whole shape.
 */
export function definitionFingerprint(def: ProjectionDefinition, shape: SourceShape): string {
  const { handler, ...data } = def as ProjectionDefinition & { handler?: CustomHandler };
  const canonical = JSON.stringify({ def: data, handlerVersion: handler?.version ?? null, source: shapeRead(def, shape) });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/** The part of `shape` a definition's rows depend on (see definitionFingerprint). */
function shapeRead(def: ProjectionDefinition, shape: SourceShape): SourceShape {
  const named = (KINDS[def.kind].columnsRead as (d: ProjectionDefinition) => readonly string[] | undefined)(def);
  if (named === undefined) return shape;
  const read = new Set([...named, ...shape.keyColumns].map(foldIdent));
  return { ...shape, columns: shape.columns.filter((c) => read.has(foldIdent(c.name))) };
}
