// a follower whose target file is overwritten in place by an older copy (cp backup.db cache.db) catches the restored target up to the source
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { test, expect, runCli, runSqliteCli } from '../../support/fixtures.ts';
import { dumpTables, waitFor, write, type Spawned } from '../../cli/support/cli.ts';
import { followers as followersOf, syncedApp } from '../support/follower.ts';

/*
 * A user restores an older copy of the target over the live file with cp
 * (same inode: not a rename, which stops the follower with TARGET_GONE),
 * while `sluice sync --follow` runs. Nothing SQLite sees moves (no commit:
 * data_version stays, and in WAL mode the connection keeps the pages it
 * cached), so the follower kept its own idea of the target: its cached
 * pages and the cursors it remembered. It applied only the next new event
 * and wrote its cursor over the restored one: the target ended with rows
 * [1,2,6] of the source's [1..6], health said ok lag 0, a later one-shot
 * sync said exit 0 too; only verify saw it. The follower now notices the
 * file rewritten under it (its size and times moved), forgets what it
 * cached, and reads the restored file's cursors: it catches up from there.
 */

const followers = followersOf();
let follower: Spawned | undefined;

/** A source with two captured tables (u stays quiet while t is written: the follower leaves u at its cursor), synced, and a backup of that early target. */
function setUp(tmp: string): { src: string; tgt: string; old: string } {
  const { src, tgt } = syncedApp(
    tmp,
    "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE u (id INTEGER PRIMARY KEY, w TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b'); INSERT INTO u VALUES (1, 'u1');",
    ['t', 'u'],
  );
  const old = path.join(tmp, 'old.db');
  runSqliteCli(tgt, `.backup '${old}'`); // the backup, at the target's early position (rows 1, 2; u1)
  for (const i of [3, 4, 5]) write(src, `INSERT INTO t VALUES (${i}, 'x${i}')`);
  write(src, "INSERT INTO u VALUES (2, 'u2')");
  write(src, "INSERT INTO t VALUES (7, 'x7')"); // u's last event is behind the source's position
  expect(runCli(['sync', src, tgt]).status).toBe(0); // the target is current
  return { src, tgt, old };
}

const same = (src: string, tgt: string) => JSON.stringify(dumpTables(src, ['t', 'u'])) === JSON.stringify(dumpTables(tgt, ['t', 'u']));

/** A follower of the current target, started (its first pass has left t and u at their cursors, which it remembers). */
async function follow(src: string, tgt: string): Promise<void> {
  follower = await followers.start(src, tgt);
}

/**
 * Once the follower's first pass is over: its -wal (if any) no longer changes for half a second. SQLite reads a
 * -wal's frames over whatever the file holds, so a copy put over the file while the follower commits is a mix of both,
 * which no follower can undo (docs/cli.md says to stop it, or restore with .restore); put over it during the
 * follower's first pass it was such a mix about one run in ten. (Not a checkpoint from here: a checkpoint writes the
 * file, which the follower takes for a rewrite and passes again.)
 */
async function settled(tgt: string): Promise<void> {
  const walSize = () => (fs.existsSync(`${tgt}-wal`) ? fs.statSync(`${tgt}-wal`).size : -1);
  let last = walSize();
  let sameSince = Date.now();
  await waitFor('the follower settled', () => {
    const now = walSize();
    if (now !== last) {
      last = now;
      sameSince = Date.now();
    }
    return Date.now() - sameSince >= 500;
  });
}

/** cp old.db cache.db: the file's contents replaced in place (same inode), as a user restores a backup. */
async function restoreInPlace(old: string, tgt: string): Promise<void> {
  await settled(tgt);
  const ino = fs.statSync(tgt).ino;
  const r = spawnSync('cp', [old, tgt], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  expect(fs.statSync(tgt).ino).toBe(ino);
}

async function stopAndCheck(src: string, tgt: string): Promise<void> {
  const f = follower as Spawned;
  f.child.kill('SIGTERM');
  const exit = await f.exited;
  follower = undefined;
  expect(exit.status, f.stderr()).toBe(0);
  expect(same(src, tgt)).toBe(true);
  const health = runCli(['health', tgt]);
  expect(health.status, health.stdout + health.stderr).toBe(0);
  const again = runCli(['sync', src, tgt]);
  expect(again.status, again.stderr).toBe(0);
  const verify = runCli(['verify', src, tgt]);
  expect(verify.status, verify.stdout + verify.stderr).toBe(0);
  expect(same(src, tgt)).toBe(true);
}

test('an older copy copied over the followed target, then a source commit: the restored target catches up to the source exactly', async ({
  tmp,
}) => {
  const { src, tgt, old } = setUp(tmp);
  await follow(src, tgt);
  await restoreInPlace(old, tgt);
  write(src, "INSERT INTO t VALUES (6, 'x6')");
  await waitFor('the target equal to the source after the restore', () => same(src, tgt), 10_000);
  await stopAndCheck(src, tgt);
});

test('an older copy copied over the followed target while the source is idle: the follower catches it up by itself', async ({ tmp }) => {
  const { src, tgt, old } = setUp(tmp);
  await follow(src, tgt);
  await restoreInPlace(old, tgt);
  await waitFor('the restored target caught up with no source commit', () => same(src, tgt), 10_000);
  write(src, "INSERT INTO t VALUES (6, 'x6')");
  await waitFor('the next commit applied', () => same(src, tgt), 10_000);
  await stopAndCheck(src, tgt);
});
