import type { Db } from '../../sqlite/index.ts';
import { FailClosedError } from '../../errors.ts';
import { enableCommand, enableHint } from '../../capture/index.ts';
import type { CapturedTableMode, Unmirrored } from './projection-set.ts';

/**
 * The refusal of a sync that has nothing to mirror. Tables captured in
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
): FailClosedError {
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
