// a look at a process lock does not refuse a process taking it at that moment
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { test, expect, describe, PYTHON } from '../support/fixtures.ts';
import { followerLockFile, lockFollower } from '../../src/apply/sync/index.ts';
import { lockHeld } from '../../src/sqlite/index.ts';

/*
 * lockHeld (prune's "does another process follow this target?", asked by
 * plan, health --config, a converging pass and each /healthz of a run)
 * looks by taking the lock for a moment and letting go. A follower
 * starting in that moment (sync --follow, a run taking its targets) must
 * not be refused with TARGET_FOLLOWED naming whoever held the lock last:
 * it waits the moment out. A Python process looks here the way lockHeld
 * does (BEGIN IMMEDIATE, ROLLBACK), only slower, as a look descheduled on
 * a loaded machine is.
 */

describe('a look at the follower lock', () => {
  test('a follower starting while another process looks at its lock takes it once the look ends', async ({ tmp }) => {
    const target = path.join(tmp, 'cache.db');
    fs.writeFileSync(target, '');
    lockFollower(target, 'sync --follow').release(); // the lock file, and its holder row, as a follower that ended leaves them
    const looker = spawn(
      PYTHON,
      [
        '-u',
        '-c',
        `import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
con.execute("BEGIN IMMEDIATE")
print("looking", flush=True)
time.sleep(0.05)
con.execute("ROLLBACK")
print("done", flush=True)
sys.stdin.read()`,
        followerLockFile(target),
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: looker.stdout })[Symbol.asyncIterator]();
    try {
      expect((await lines.next()).value).toBe('looking');
      const lock = lockFollower(target, 'sync --follow');
      lock.release();
      expect((await lines.next()).value).toBe('done');
    } finally {
      looker.stdin.end();
      looker.kill();
    }
    // A look from this process finds the lock free again, and one taken held.
    expect(lockHeld(followerLockFile(target))).toBeUndefined();
    const held = lockFollower(target, 'sync --follow');
    try {
      expect(lockHeld(followerLockFile(target))?.heldBy?.pid).toBe(process.pid);
    } finally {
      held.release();
    }
  });
});
