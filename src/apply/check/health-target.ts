import type { Db } from '../../sqlite/index.ts';
import {
  compileProjection,
  ownedTables,
  type SourceShape,
  kindNamed,
  parseStoredDefinition,
  type CompiledProjection,
} from '../../projection/index.ts';
import type { ProjectionRecord } from '../target/index.ts';
import { quoteIdent, repairAction } from '../../sqlite/index.ts';
import { tableShapeProblem } from './target-shape.ts';

/*
 * What health can see of a projection's own tables without reading their
 * rows: a table that is missing (dropped by hand; of the kinds whose tables
 * sluice makes, not a custom handler's, which makes them when it chooses),
 * and one whose shape is not what its kind makes (target-shape.ts, the rule
 * sync checks before each batch: its columns, their declared types'
 * affinities and collations, its keys; an FTS5 index's declaration).
 * verify says the same before it compares rows. Rows edited by hand and
 * other indexes are not looked at: `sluice verify` compares rows.
 */

/** Problems with the projection's tables in the target, each with the command that repairs it. */
export function targetTableProblems(
  target: Db,
  r: ProjectionRecord,
  sourcePath: string | undefined,
  targetPath: string,
  schema = 'main',
  /** False: only tables that are missing (sync checks their shape by the same rule before each batch it applies). */
  columns = true,
): string[] {
  if (r.cursor === null || r.state === 'suspended') return [];
  const repair = () => repairAction(r.name, 'TARGET_TABLE_CHANGED', sourcePath, targetPath, r.sourceTable);
  const problems: string[] = [];
  for (const t of kindNamed(r.kind)?.makesTables === true ? ownedTables(r) : []) {
    const exists =
      target.prepare(`SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`).get(t) !==
      undefined;
    if (!exists) problems.push(`table ${t} of projection ${r.name} is missing from the target (dropped by hand?); ${repair()}`);
  }
  if (problems.length > 0 || !columns) return problems;
  const p = storedProjection(r);
  const changed = p === undefined ? undefined : tableShapeProblem(target, schema, p);
  if (changed !== undefined) problems.push(`${changed.message}; ${repair()}`);
  return problems;
}

/** The stored definition of `r` compiled over its stored source shape, or undefined when it cannot be compiled here. */
function storedProjection(r: ProjectionRecord): CompiledProjection | undefined {
  try {
    return compileProjection(
      parseStoredDefinition(r.definition, `stored definition of ${r.name}`),
      JSON.parse(r.sourceShape) as SourceShape,
    );
  } catch {
    return undefined;
  }
}
