import { repairAction, type Db } from '../../sqlite/index.ts';
import { SluiceError } from '../../errors.ts';
import { compileAgainstSource, type CompiledProjection, type ProjectionDefinition } from '../../projection/index.ts';
import type { ProjectionRecord } from '../target/index.ts';
import { missingMirrors, type CapturedTableMode } from './projection-set.ts';

/**
 * A mirror "*" adds, compiled against the source (main on `db`) as it is
 * now, or why it cannot be made (the refusal's code and message): sync
 * leaves such a table unmirrored and says why.
 */
export function compileMirror(db: Db, d: ProjectionDefinition): CompiledProjection | { readonly refused: string } {
  try {
    return compileAgainstSource(db, d);
  } catch (err) {
    if (!(err instanceof SluiceError)) throw err;
    return { refused: `${err.code}: ${err.message}` };
  }
}

/** A mirror "*" asks for that the target does not hold. */
export interface UnbuiltMirror {
  readonly name: string;
  /** Its source table. */
  readonly source: string;
  /** Why the next sync cannot make it either (it leaves the table out), as sync says it; absent when the next sync builds it. */
  readonly refused?: string;
}

/**
 * The mirrors "*" asks for that the target does not hold (missingMirrors),
 * each with why the next sync cannot build it, where it cannot: compiled
 * against source `db` as sync compiles them (compileMirror). What health
 * and verify report, MIRROR_NOT_BUILT or MIRROR_REFUSED.
 */
export function unbuiltMirrors(
  db: Db,
  target: Db,
  schema: string,
  records: readonly ProjectionRecord[],
  captured: Iterable<CapturedTableMode>,
): UnbuiltMirror[] {
  return missingMirrors(target, schema, records, captured).map((d) => {
    const c = compileMirror(db, d);
    return 'refused' in c ? { name: d.name, source: d.source, refused: c.refused } : { name: d.name, source: d.source };
  });
}

/**
 * What health and verify say of unbuilt mirror `d`: its code, and why it is
 * not there with what builds it (the next sync; or, where sync cannot make
 * it, the change of the table its refusal names).
 */
export function unbuiltMirrorAction(
  d: UnbuiltMirror,
  sourcePath: string,
  targetPath: string,
): { readonly reason: 'MIRROR_NOT_BUILT' | 'MIRROR_REFUSED'; readonly action: string } {
  const all = 'this target mirrors every captured table: "*"';
  return d.refused === undefined
    ? {
        reason: 'MIRROR_NOT_BUILT',
        action: `table ${d.source} is captured but not mirrored yet (${all}); ${repairAction(d.name, 'MIRROR_NOT_BUILT', sourcePath, targetPath)}`,
      }
    : {
        reason: 'MIRROR_REFUSED',
        action: `table ${d.source} is captured but its mirror cannot be made (${all}, and sluice sync leaves ${d.source} out): ${d.refused.replace(/\.$/, '')}; ${repairAction(d.name, 'MIRROR_REFUSED', sourcePath, targetPath, d.source)}`,
      };
}
