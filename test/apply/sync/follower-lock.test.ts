// a targets follower lock admits one holder names it to the next and is freed when its process ends
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { test, expect, describe, PYTHON } from '../../support/fixtures.ts';
import { followerLockFile, lockFollower } from '../../../src/apply/sync/index.ts';
import { SluiceError } from '../../../src/errors.ts';

/*
 * The lock behind "one follower per target" (sync --follow, and subscribe
 * --follow with the same call): lockFollower(target, command) takes it or
 * throws TARGET_FOLLOWED naming the holder; release() frees it; and the
 * operating system frees it when its process ends, even by SIGKILL. It is
 * SQLite's own write lock on TARGET-follower, so another program (Python's
 * sqlite3 here) holding it counts the same as another sluice.
 */

function refusal(fn: () => unknown): SluiceError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SluiceError);
    return err as SluiceError;
  }
  throw new Error('expected a refusal');
}

describe('the follower lock of a target', () => {
  test('one holder at a time in a process: the second is refused with TARGET_FOLLOWED naming the first, and takes it once released', ({
    tmp,
  }) => {
    const target = path.join(tmp, 'cache.db');
    fs.writeFileSync(target, '');
    const first = lockFollower(target, 'sync --follow');
    const err = refusal(() => lockFollower(target, 'subscribe --follow'));
    expect(err.code).toBe('TARGET_FOLLOWED');
    expect(err.message).toContain(target);
    expect(err.message).toContain(`process ${process.pid} (sync --follow`);
    expect(err.message).toContain(followerLockFile(target));
    first.release();
    first.release(); // idempotent
    const second = lockFollower(target, 'subscribe --follow');
    second.release();
  });

  test('a symlink or a relative path to the target names the same lock', ({ tmp }) => {
    const target = path.join(tmp, 'cache.db');
    fs.writeFileSync(target, '');
    const link = path.join(tmp, 'link.db');
    fs.symlinkSync(target, link);
    const held = lockFollower(target, 'sync --follow');
    try {
      expect(followerLockFile(link)).toBe(followerLockFile(target));
      expect(refusal(() => lockFollower(link, 'sync --follow')).code).toBe('TARGET_FOLLOWED');
      expect(refusal(() => lockFollower(path.relative(process.cwd(), target), 'sync --follow')).code).toBe('TARGET_FOLLOWED');
    } finally {
      held.release();
    }
  });

  test('held by another process, refused; freed when that process is killed with SIGKILL, with nothing to clean up', async ({ tmp }) => {
    const target = path.join(tmp, 'cache.db');
    fs.writeFileSync(target, '');
    const lockFile = followerLockFile(target);
    // Takes the lock the way sluice does (BEGIN IMMEDIATE on the lock file) and holds it until killed.
    const holder = spawn(
      PYTHON,
      [
        '-u',
        '-c',
        `import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
con.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(600)`,
        lockFile,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((r) => holder.on('exit', r));
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on('data', (d: Buffer) => (String(d).includes('held') ? resolve() : undefined));
        holder.on('exit', () => reject(new Error('the holder exited before it held the lock')));
      });
      const err = refusal(() => lockFollower(target, 'sync --follow'));
      expect(err.code).toBe('TARGET_FOLLOWED');
      expect(err.message).toContain(target);
      holder.kill('SIGKILL');
      await exited;
      const lock = lockFollower(target, 'sync --follow');
      lock.release();
    } finally {
      if (holder.exitCode === null && holder.signalCode === null) holder.kill('SIGKILL');
    }
  });
});
