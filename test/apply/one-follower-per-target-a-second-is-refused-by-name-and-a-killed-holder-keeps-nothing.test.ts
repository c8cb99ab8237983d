import path from 'node:path';
import { spawn } from 'node:child_process';
import { test, expect, ROOT } from '../support/fixtures.ts';
import { acquireFollowerLock, followerLockFile } from '../../src/apply/follower-lock.ts';
import { SluiceError } from '../../src/errors.ts';

/*
 * The follower lock (src/apply/follower-lock.ts): one follower per target. A
 * second acquire, in this process or another, is refused with
 * TARGET_HAS_FOLLOWER naming the holder and how to stop it; a release, or the
 * holder's death by SIGKILL, frees the target at once.
 */

function refusal(fn: () => unknown): SluiceError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SluiceError) return err;
    throw err;
  }
  throw new Error('not refused');
}

test('a second follower is refused by name until the first releases', ({ tmp }) => {
  const target = path.join(tmp, 'cache.db');
  const lock = acquireFollowerLock(target, 'sluice subscribe --follow');
  expect(lock.file).toBe(followerLockFile(target));
  const err = refusal(() => acquireFollowerLock(target, 'sluice sync --follow'));
  expect(err.code).toBe('TARGET_HAS_FOLLOWER');
  expect(err.exitCode).toBe(1);
  expect(err.message).toContain(`Target ${target} is already followed by sluice subscribe --follow (pid ${process.pid}, since `);
  expect(err.message).toContain(`kill ${process.pid}`);
  lock.release();
  lock.release(); // idempotent
  const again = acquireFollowerLock(target, 'sluice sync --follow');
  again.release();
});

test('a holder killed with SIGKILL keeps nothing', async ({ tmp }) => {
  const target = path.join(tmp, 'cache.db');
  // Another process holds it (the compiled module, as the CLI runs it).
  const module = path.join(ROOT, 'dist', 'src', 'apply', 'follower-lock.js');
  const child = spawn(
    process.execPath,
    [
      '-e',
      `import(${JSON.stringify(module)}).then((m) => { m.acquireFollowerLock(process.argv[1], 'holder'); console.log('held'); setInterval(() => {}, 1000); })`,
      target,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => (d.toString().includes('held') ? resolve() : undefined));
      child.on('exit', (code) => reject(new Error(`holder exited ${code}`)));
    });
    const err = refusal(() => acquireFollowerLock(target, 'sluice subscribe --follow'));
    expect(err.message).toContain(`holder (pid ${child.pid}`);
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
    acquireFollowerLock(target, 'sluice subscribe --follow').release();
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
