import type { Db } from '../../sqlite/index.ts';
import { FailClosedError } from '../../errors.ts';
import { enableCommand, enableHint } from '../../capture/index.ts';
import type { CapturedTableMode, Unmirrored } from './projection-set.ts';

/**
 * What the refusal of a sync with nothing to mirror says in its caller's
 * terms (sluice run's: the pipeline file declares the capture, so its fix is
 * the file's, not `sluice enable`, which run would undo): given every
 * captured table with its mode, and the images-mode tables whose mirror
 * cannot be made (with why). SyncOptions.nothingToMirror.
 */
export type NothingToMirrorSay = (captured: readonly CapturedTableMode[], unmirrored: readonly Unmirrored[]) => string;

/**
 * The refusal of a sync that has nothing to mirror (`say`: in its caller's terms, else sync's). Tables captured in
 * another mode are captured in images mode by enable (with none captured,
 * the source's own tables are named); a table captured in images mode whose
 * mirror cannot be made is named with why (its code and fix), since
 * enabling it again changes nothing.
 */
export function nothingToMirror(
  db: Db,
  sourcePath: string,
  captured: readonly CapturedTableMode[],
  unmirrored: readonly Unmirrored[],
  say?: NothingToMirrorSay,
): FailClosedError {
  if (say !== undefined)
    return new FailClosedError(
      'NOTHING_TO_SYNC',
      say(
        captured,
        unmirrored.filter((u) => u.mode === 'images'),
      ),
    );
  if (unmirrored.some((u) => u.mode === 'images')) {
    const each = unmirrored.map(
      (u) =>
        `${u.table}: ${u.mode === 'images' ? u.why.replace(/\.$/, '') : `${u.why}; to mirror it, run ${enableCommand(sourcePath, [u.table], 'images')}`}`,
    );
    return new FailClosedError(
      'NOTHING_TO_SYNC',
      `Source ${sourcePath} captures no table that can be mirrored, so there is nothing to sync. ${each.join('. ')}. Fix that, or pass --projection.`,
    );
  }
  const others = captured.map((t) => t.name);
  const fix = others.length > 0 ? enableCommand(sourcePath, others, 'images') : enableHint(db, sourcePath);
  return new FailClosedError(
    'NOTHING_TO_SYNC',
    `Source ${sourcePath} captures no table in images mode, so there is nothing to mirror. Run ${fix}, or pass --projection.`,
  );
}
