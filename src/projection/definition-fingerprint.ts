import { createHash } from 'node:crypto';
import { foldIdent } from '../sqlite/index.ts';
import type { CustomHandler, ProjectionDefinition } from './definition.ts';
import type { SourceShape } from './compiled.ts';

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
export function definitionFingerprint(def: ProjectionDefinition, shape: SourceShape, columnsRead: readonly string[] | undefined): string {
  const { handler, ...data } = def as ProjectionDefinition & { handler?: CustomHandler };
  const canonical = JSON.stringify({ def: data, handlerVersion: handler?.version ?? null, source: shapeRead(shape, columnsRead) });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/** The part of `shape` a definition's rows depend on (see definitionFingerprint). */
function shapeRead(shape: SourceShape, named: readonly string[] | undefined): SourceShape {
  if (named === undefined) return shape;
  const read = new Set([...named, ...shape.keyColumns].map(foldIdent));
  return { ...shape, columns: shape.columns.filter((c) => read.has(foldIdent(c.name))) };
}
