import fs from 'node:fs';
import { fileKey, type Db } from '../../sqlite/index.ts';
import type { ProjectionRecord } from '../target/index.ts';
import { isDefaultMirror, readProjectionSet, type MirrorAll, type ProjectionSet } from './projection-set.ts';

/*
 * Which of a target's projections are a source's business: what a plain
 * `sluice sync SRC TGT` runs, what `explain SRC TGT` says it does, and what
 * `sluice verify SRC TGT` answers for. One target may be fed by more than
 * one source file (a "*" of one, a map of another given with --projection),
 * and each projection row records the source that feeds it (its capture id
 * and its file's path). A projection is the source's when
 *
 * - it is of the source's capture (its stored source id is the source's),
 * - or it was synced from the source's file (under an earlier capture of it,
 *   its capture enabled again since: its cursor does not continue,
 *   SOURCE_CHANGED, and the next sync rebuilds it),
 * - or it records no source file (a row an import or a subscriber made, or
 *   an older sync; a mirror "*" made is then of the file "*" names, and of
 *   none when "*" names none).
 *
 * A projection of another source file is that file's, whether or not the
 * file is there now: a file moved away for a while (a backup restoring it,
 * a volume unmounted) makes its projections no one else's. A plain sync of
 * this one leaves it as it is (`sync OTHER TGT` feeds it, and health reads
 * its lag from OTHER), and verify leaves it out. "*" itself is the source's
 * on the same terms: the file it names is this one, or none. A source file
 * moved for good and its capture enabled again is another file with another
 * capture: its new path takes them over only when asked, with the
 * definitions given explicitly. A definition given explicitly
 * (--projection, '*' included) is built from the source it is given with,
 * whatever the target held under its name.
 */

/** Whether `recorded`, a source path a target stored, names another source file than `sourcePath` (there now or not). */
export function anotherSourceFile(recorded: string | null, sourcePath: string): boolean {
  return recorded !== null && fileKey(recorded) !== fileKey(sourcePath);
}

/** A source as a plain sync, explain or verify of a target reads it: its capture id (undefined: none) and its file. */
export interface SourceOfTarget {
  readonly sourceId: string | undefined;
  readonly path: string;
}

/**
 * Whether the target's "*" is `source`'s (see above): the file it names is
 * the source's, or none; or one not there now whose mirrors (`records`:
 * the target's projections) are of the source's capture (the same capture
 * at a new path: the file moved, its capture kept).
 */
export function isMirrorAllOf(
  mirrorAll: MirrorAll | undefined,
  source: SourceOfTarget,
  records: readonly Pick<ProjectionRecord, 'name' | 'kind' | 'sourceTable' | 'definition' | 'sourceId'>[],
): mirrorAll is MirrorAll {
  if (mirrorAll === undefined) return false;
  if (!anotherSourceFile(mirrorAll.sourcePath, source.path)) return true;
  const moved = mirrorAll.sourcePath !== null && !fs.existsSync(mirrorAll.sourcePath);
  return moved && source.sourceId !== undefined && records.some((r) => isDefaultMirror(r) && r.sourceId === source.sourceId);
}

/** Whether stored projection `r` is `source`'s business (see above); `mirrorAll` the target's "*". */
export function isOfSource(
  r: Pick<ProjectionRecord, 'name' | 'kind' | 'sourceTable' | 'definition' | 'sourceId' | 'sourcePath'>,
  source: SourceOfTarget,
  mirrorAll: MirrorAll | undefined,
): boolean {
  if (source.sourceId !== undefined && r.sourceId === source.sourceId) return true;
  const recorded = r.sourcePath ?? (mirrorAll !== undefined && isDefaultMirror(r) ? mirrorAll.sourcePath : null);
  return !anotherSourceFile(recorded, source.path);
}

/** The target's set as `source` answers for it. */
export interface SetOfSource {
  /** The target's set as stored. */
  readonly set: ProjectionSet;
  /** Its stored projections that are the source's. */
  readonly projections: ProjectionRecord[];
  /** "*", when the set holds it and it is the source's. */
  readonly mirrorAll: MirrorAll | undefined;
  /** The set holds "*" of another source file (there now or not). */
  readonly othersMirrorAll: boolean;
}

/** The target's (attached as `schema` on `db`) set as `source` answers for it: `records` are its stored projections. */
export function setOfSource(db: Db, schema: string, records: readonly ProjectionRecord[], source: SourceOfTarget): SetOfSource {
  const set = readProjectionSet(db, schema, records);
  const mine = isMirrorAllOf(set.mirrorAll, source, records);
  return {
    set,
    projections: records.filter((r) => isOfSource(r, source, set.mirrorAll)),
    mirrorAll: mine ? set.mirrorAll : undefined,
    othersMirrorAll: set.mirrorAll !== undefined && !mine,
  };
}
