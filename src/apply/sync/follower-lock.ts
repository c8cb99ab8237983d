import { SluiceError } from '../../errors.ts';
import { tryProcessLock, type ProcessLock, realFilePath } from '../../sqlite/index.ts';

/*
 * A target takes one follower (sync --follow, subscribe --follow): two
 * long-lived writers of one target, with different definitions of one
 * projection, rebuild it in turn on every other pass (DEFINITION_CHANGED),
 * and two subscribers share one durable consumer. The second is refused.
 * One-shot commands (sync, reinit, drop, import) take no lock: each of
 * their target transactions is whole, beside a follower's as beside
 * another program's.
 */

/** The lock file of a target's follower: beside the target, named after its real path (a symlink or another relative path to one target is the same target). */
export function followerLockFile(targetPath: string): string {
  return `${realFilePath(targetPath)}-follower`;
}

/**
 * Takes the follower lock of `targetPath` for this process, for as long as
 * it runs or until `release()`. Throws TARGET_FOLLOWED (exit 1) naming the
 * process that holds it when another process follows that target. The
 * operating system frees the lock when the process ends, however it ends.
 *
 * @example
 * const lock = lockFollower('cache.db', 'sync --follow');
 * try {
 *   await follow(syncer, options);
 * } finally {
 *   lock.release();
 * }
 */
export function lockFollower(targetPath: string, command: string): ProcessLock {
  const file = followerLockFile(targetPath);
  const attempt = tryProcessLock(file, command);
  if ('taken' in attempt) return attempt.taken;
  const h = attempt.heldBy;
  const who =
    h === undefined
      ? 'another process'
      : `process ${h.pid} (${h.command}${h.host === '' ? '' : ` on ${h.host}`}, since ${new Date(h.sinceMs).toISOString()})`;
  throw new SluiceError(
    'TARGET_FOLLOWED',
    `Target ${targetPath} is followed by ${who}, which holds its lock ${file}: a target takes one follower (two would write it in turn: rebuild a projection they define differently, share one durable consumer). Stop that process first${h === undefined ? '' : ` (kill ${h.pid})`}, or follow into another target; a one-shot sync may run beside it.`,
  );
}
