import fs from 'node:fs';
import path from 'node:path';
import { SluiceError } from '../../errors.ts';
import { describeHolder, tryProcessLock, lockHeld, type ProcessLock, realFilePath } from '../../sqlite/index.ts';

/*
 * A target takes one follower (sync --follow, subscribe --follow): two
 * long-lived writers of one target, with different definitions of one
 * projection, rebuild it in turn on every other pass (DEFINITION_CHANGED),
 * and two subscribers share one durable consumer. The second is refused.
 * One-shot commands (sync, reinit, drop, import) take no lock: each of
 * their target transactions is whole, beside a follower's as beside
 * another program's.
 *
 * A target is a file, whatever name it is reached by. The lock file is
 * named after the target's real path (a symlink resolves to it), but a hard
 * link is another name of the same file that no path comparison finds: a
 * follower through it took a lock of its own, and SQLite, which keys a
 * database's -wal and -shm by path, kept two logs for one file, which
 * corrupted it. So taking the lock also looks, in the target's folder, at
 * the locks of the other names of the same file (same device and inode, as
 * sluice tells a hard-linked source from its target): one held refuses the
 * newcomer too. Two followers starting at the same moment through two names
 * may both be refused (each sees the other's lock); neither writes.
 * A hard link in another folder is not looked for (no file lists a file's
 * names).
 */

const SUFFIX = '-follower';

/** The lock file of a target's follower: beside the target, named after its real path (a symlink or another relative path to one target is the same target). */
export function followerLockFile(targetPath: string): string {
  return `${realFilePath(targetPath)}${SUFFIX}`;
}

type Holder = NonNullable<ReturnType<typeof lockHeld>>['heldBy'];

/** A held follower lock of the target's file under another name of it (a hard link in its folder): that name, its lock file, who holds it. */
interface OtherName {
  readonly name: string;
  readonly file: string;
  readonly heldBy: Holder;
}

/**
 * The held follower lock of another name of the file at `targetPath` (a
 * hard link beside it), if any: looked at without taking it for more than a
 * moment, nothing written. None when the file has one name only.
 */
function followedByAnotherName(targetPath: string): OtherName | undefined {
  const real = realFilePath(targetPath);
  const st = fs.statSync(real, { bigint: true, throwIfNoEntry: false });
  if (st === undefined || st.nlink < 2n || st.ino === 0n) return undefined;
  const folder = path.dirname(real);
  for (const entry of fs.readdirSync(folder)) {
    if (!entry.endsWith(SUFFIX) || entry.length === SUFFIX.length) continue;
    const name = path.join(folder, entry.slice(0, -SUFFIX.length));
    if (name === real) continue;
    const other = fs.statSync(name, { bigint: true, throwIfNoEntry: false });
    if (other === undefined || other.dev !== st.dev || other.ino !== st.ino) continue;
    const file = path.join(folder, entry);
    const held = lockHeld(file);
    if (held !== undefined) return { name, file, heldBy: held.heldBy };
  }
  return undefined;
}

/**
 * Whether a process follows the file at `targetPath` now, through this name
 * or another name of it (a hard link beside it): looked at without taking a
 * lock for more than a moment, nothing written.
 */
export function targetFollowed(targetPath: string): boolean {
  return lockHeld(followerLockFile(targetPath)) !== undefined || followedByAnotherName(targetPath) !== undefined;
}

/**
 * Takes the follower lock of `targetPath` for this process, for as long as
 * it runs or until `release()`. Throws TARGET_FOLLOWED (exit 1) naming the
 * process that holds it when another process follows that target, through
 * this name or another name of the same file (a hard link beside it). The
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
  if (!('taken' in attempt)) throw followed(targetPath, file, attempt.heldBy, undefined);
  const lock = attempt.taken;
  let other: OtherName | undefined;
  try {
    other = followedByAnotherName(targetPath);
  } catch (err) {
    lock.release();
    throw err;
  }
  if (other === undefined) return lock;
  lock.release();
  throw followed(targetPath, other.file, other.heldBy, other.name);
}

function followed(targetPath: string, file: string, h: Holder, otherName: string | undefined): SluiceError {
  const who = describeHolder(h);
  const kill = h === undefined ? '' : ` (kill ${h.pid})`;
  if (otherName === undefined)
    return new SluiceError(
      'TARGET_FOLLOWED',
      `Target ${targetPath} is followed by ${who}, which holds its lock ${file}: a target takes one follower (two would write it in turn: rebuild a projection they define differently, share one durable consumer). Stop that process first${kill}, or follow into another target; a one-shot sync may run beside it.`,
    );
  return new SluiceError(
    'TARGET_FOLLOWED',
    `Target ${targetPath} is followed by ${who} through ${otherName}, another name of the same file (a hard link), which holds its lock ${file}: a target takes one follower, whatever name it is reached by (through two names SQLite also keeps two -wal files for one database, which corrupts it). Stop that process first${kill}, or follow into another target; write this file through one name only.`,
  );
}
