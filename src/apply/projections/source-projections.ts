import fs from 'node:fs';
import { InvalidInputError } from '../../errors.ts';
import { fileKey, pathIdentity, shellCommand, shellWord, type Db } from '../../sqlite/index.ts';
import { checkConsumers, readProjections, TARGET_SCHEMA, type ProjectionRecord } from '../target/index.ts';
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

/*
 * A target that holds projections (or a "*") and none of them the source's:
 * a plain sync of the source has nothing to run, explain nothing to
 * explain, verify nothing to verify. Each refuses it alike,
 * NO_PROJECTIONS_OF_SOURCE (exit 1, nothing written), naming whose
 * projections the target holds and how to build some of the source's there:
 * a definition file, or "*", given with the sync. Not a silent exit 0: the
 * source's rows are in no table of the target. A target that holds nothing
 * at all is not this (a plain sync builds "*" there).
 */

/** Whether the target holds projections, or a "*", and none of them `own`'s source's (see above). */
export function holdsOnlyOthers(own: SetOfSource, records: readonly ProjectionRecord[]): boolean {
  return own.projections.length === 0 && own.mirrorAll === undefined && (records.length > 0 || own.othersMirrorAll);
}

/**
 * The refusal (see above) of a plain `doing` ("sync", "explain", "verify")
 * of `sourcePath` into `targetPath`, whose projections `records` and set
 * `set` are all other sources'.
 */
export function noProjectionsOfSource(
  doing: 'sync' | 'explain' | 'verify',
  sourcePath: string,
  targetPath: string,
  records: readonly ProjectionRecord[],
  set: ProjectionSet,
): InvalidInputError {
  const bySource = new Map<string, string[]>();
  const add = (file: string | null, what: string) => {
    const key = file ?? '';
    bySource.set(key, [...(bySource.get(key) ?? []), what]);
  };
  for (const r of records)
    add(r.sourcePath ?? (set.mirrorAll !== undefined && isDefaultMirror(r) ? set.mirrorAll.sourcePath : null), r.name);
  if (set.mirrorAll !== undefined) add(set.mirrorAll.sourcePath, '"*"');
  const whose = [...bySource]
    .map(([file, names]) =>
      file === ''
        ? `${names.join(', ')} of no recorded source file`
        : `${names.join(', ')} of ${file}${fs.existsSync(file) ? '' : ' (not there now)'}`,
    )
    .join('; ');
  const nothing = {
    sync: 'a plain sync of it has nothing to run',
    explain: 'there is nothing to explain',
    verify: 'there is nothing to verify',
  }[doing];
  const sync = shellCommand('sync', { source: sourcePath, target: targetPath });
  const mirrored = records.filter((r) => isDefaultMirror(r)).map((r) => r.sourceTable);
  const takesOver =
    mirrored.length === 0 ? '' : `; the mirrors "*" made there, ${mirrored.join(', ')}, are then built from ${shellWord(sourcePath)}`;
  return new InvalidInputError(
    'NO_PROJECTIONS_OF_SOURCE',
    `Target ${targetPath} holds no projection of source ${sourcePath}, so ${nothing}: its projections are other sources' (${whose}), which a sync of their own source feeds. To build projections of ${sourcePath} there, give them to the sync: ${sync} --projection FILE (a definition file; its name and target table not taken there), or ${sync} --projection '*' (a mirror of every table it captures${takesOver}).`,
  );
}

/**
 * Whether source `sourcePath` (main on `db`, the target attached) acknowledges
 * projections for the target at `targetPath` that the target does not hold
 * (CONSUMER_NOT_BUILT: a sync reports them, verify lists them), so that a
 * target holding only other sources' projections is still its business.
 */
export function acknowledgesLost(db: Db, sourcePath: string, targetPath: string): boolean {
  const held = new Set(readProjections(db, TARGET_SCHEMA).map((r) => r.name));
  const at = { targetKey: fs.realpathSync(targetPath), targetFile: pathIdentity(targetPath), sourcePath };
  return checkConsumers(db, db, TARGET_SCHEMA, at, held).lost.length > 0;
}
