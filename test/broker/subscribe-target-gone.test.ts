// a target deleted or replaced while subscribe --follow runs stops it with TARGET_GONE and nothing is written to the old file
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import {
  makeDir,
  removeDir,
  trackerSource,
  startCli,
  waitFor,
  sourceSeq,
  projectionSeq,
  runCliAsync,
  expectOneLineError,
  dumpTables,
  sha256,
  type Spawned,
} from '../cli/support/cli.ts';
import { COMMENT_WRITER, natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';

/*
 * subscribe --follow writes the target file it opened, as sync --follow
 * does. When the file at the target's path is deleted, or replaced by
 * another file (an older copy restored from a backup), it went on applying
 * into the unlinked file, said nothing, and exited 0, while the file at the
 * path stayed stale. Now it notices (the path's file identity is not the
 * one it opened), before each batch and while the stream is idle, and
 * stops as sync does: one line, TARGET_GONE naming the target and the fix,
 * exit 1; it does not make the file again, and leaves a file put in its
 * place as it is. The next subscribe goes on from that file's cursor.
 */

const nats = natsForFile();

function removeTarget(target: string): void {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${target}${suffix}`, { force: true });
}

async function exitWithin(f: Spawned): Promise<{ status: number | null }> {
  const exit = await Promise.race([f.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000))]);
  expect(exit, `the subscriber is still running 10 s after its target was deleted; stderr: ${f.stderr()}`).toBeDefined();
  return exit ?? { status: null };
}

function expectGone(status: number | null, stderr: string, target: string): void {
  expect(status, stderr).toBe(1);
  expectOneLineError({ stdout: '', stderr }, 'TARGET_GONE');
  expect(stderr).toContain(target);
  expect(stderr).toContain('while subscribe ran');
  expect(stderr).toContain('Run subscribe again');
}

describe('the target of subscribe --follow', () => {
  test('deleted while the stream is idle: the subscriber stops with TARGET_GONE, exit 1, and does not make it again', async () => {
    const dir = makeDir();
    const url = nats.server().url;
    let sub: Spawned | undefined;
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const tgt = path.join(dir, 'cache.db');
      await publishOnce(src, url);
      sub = startCli(['subscribe', tgt, '--nats', url, '--source', sid, '--follow']);
      const s = sub;
      await waitFor('the snapshot applied', () => fs.existsSync(tgt) && projectionSeq(tgt, 'comments') === 0, 30_000);
      removeTarget(tgt);
      const exit = await exitWithin(s);
      expectGone(exit.status, s.stderr(), tgt);
      expect(fs.existsSync(tgt)).toBe(false);
    } finally {
      if (sub !== undefined && sub.child.exitCode === null) sub.child.kill('SIGKILL');
      removeDir(dir);
    }
  }, 60_000);

  test('deleted, then an older copy restored while batches come: it stops with TARGET_GONE, leaves the copy as it is, and the next subscribe brings it up', async () => {
    const dir = makeDir();
    const url = nats.server().url;
    let sub: Spawned | undefined;
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const tgt = path.join(dir, 'cache.db');
      const old = path.join(dir, 'cache-old.db');
      const publish = () => publishOnce(src, url, { batchSeqs: 10 });
      await publish();
      sub = startCli(['subscribe', tgt, '--nats', url, '--source', sid, '--follow']);
      const s = sub;
      await waitFor('the snapshot applied', () => fs.existsSync(tgt) && projectionSeq(tgt, 'comments') === 0, 30_000);
      runPython(COMMENT_WRITER, [src, '5']);
      await publish();
      await waitFor('the first batches applied', () => projectionSeq(tgt, 'comments') === sourceSeq(src), 30_000);
      execFileSync('sqlite3', [tgt, `.backup ${old}`]);
      runPython(COMMENT_WRITER, [src, '5']);
      await publish();
      await waitFor('the next batches applied', () => projectionSeq(tgt, 'comments') === sourceSeq(src), 30_000);

      // Deleted and, while batches are published, restored from the older copy.
      removeTarget(tgt);
      fs.copyFileSync(old, tgt);
      const restored = sha256(tgt);
      runPython(COMMENT_WRITER, [src, '5']);
      await publish();
      const exit = await exitWithin(s);
      expectGone(exit.status, s.stderr(), tgt);
      expect(sha256(tgt), 'the restored copy was written').toBe(restored);

      // The next subscribe goes on from the restored copy's cursor.
      const again = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sid]);
      expect(again.status, again.stderr).toBe(0);
      expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments']));
    } finally {
      if (sub !== undefined && sub.child.exitCode === null) sub.child.kill('SIGKILL');
      removeDir(dir);
    }
  }, 90_000);
});
