// a target deleted or replaced while sync follow runs stops it with one line and nothing is written to the old file
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { sync } from '../../src/apply/sync/index.ts';
import {
  runCliAsync,
  makeDir,
  removeDir,
  trackerSource,
  expectOneLineError,
  dumpTables,
  write,
  startCli,
  waitFor,
  type Spawned,
} from './support/cli.ts';

/*
 * sync --follow writes the target file it opened. When the file at the
 * target's path is deleted, or replaced by another file, the follower would
 * go on writing an unlinked inode (or the wrong file): it notices (the
 * path's file identity is not the one it opened) and stops with one line,
 * TARGET_GONE naming the target and the fix, exit 1, without making the
 * file again. The next sync rebuilds it from the source.
 */

let dir: string;
let running: Spawned | undefined;

beforeAll(() => {
  dir = makeDir();
});
afterEach(() => {
  if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  running = undefined;
});
afterAll(() => removeDir(dir));

function removeTarget(target: string): void {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${target}${suffix}`, { force: true });
}

async function exitWithin(f: Spawned): Promise<{ status: number | null }> {
  const exit = await Promise.race([f.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000))]);
  expect(exit, 'the follower is still running 10 s after its target was deleted').toBeDefined();
  return exit ?? { status: null };
}

function expectGone(r: { status: number | null; stdout: string; stderr: string }, target: string): void {
  expect(r.status, r.stderr).toBe(1);
  expectOneLineError(r, 'TARGET_GONE');
  expect(r.stderr).toContain(target);
  expect(r.stderr).toContain('Run sync again to rebuild the target');
}

describe('the target of sync --follow', () => {
  test('deleted: the follower stops with TARGET_GONE, exit 1, and does not make it again; the next sync rebuilds it', async () => {
    const src = trackerSource(path.join(dir, 'a.db'), ['issues']);
    const target = path.join(dir, 'a-cache.db');
    running = startCli(['sync', src, target, '--follow', '--json']);
    const f = running;
    await waitFor('the first pass', () => f.stdout().includes('\n'));
    removeTarget(target);
    write(src, "UPDATE issues SET state = 'closed' WHERE number = 1");
    const exit = await exitWithin(f);
    expectGone({ status: exit.status, stdout: '', stderr: f.stderr() }, target);
    expect(fs.existsSync(target)).toBe(false);
    const again = await runCliAsync(['sync', src, target]);
    expect(again.status, again.stderr).toBe(0);
    expect(dumpTables(target, ['issues'])).toEqual(dumpTables(src, ['issues']));
  });

  test('deleted while the source is idle: the follower notices without waiting for a commit', async () => {
    const src = trackerSource(path.join(dir, 'b.db'), ['issues']);
    const target = path.join(dir, 'b-cache.db');
    running = startCli(['sync', src, target, '--follow', '--json']);
    const f = running;
    await waitFor('the first pass', () => f.stdout().includes('\n'));
    await new Promise((r) => setTimeout(r, 500)); // idle
    removeTarget(target);
    const exit = await exitWithin(f);
    expectGone({ status: exit.status, stdout: '', stderr: f.stderr() }, target);
    expect(fs.existsSync(target)).toBe(false);
  });

  test('replaced by another file: the follower stops with TARGET_GONE and leaves the new file as it is', async () => {
    const src = trackerSource(path.join(dir, 'c.db'), ['issues']);
    const target = path.join(dir, 'c-cache.db');
    const other = path.join(dir, 'c-other.db');
    await sync(src, other);
    running = startCli(['sync', src, target, '--follow', '--json']);
    const f = running;
    await waitFor('the first pass', () => f.stdout().includes('\n'));
    const before = dumpTables(other);
    removeTarget(target);
    fs.renameSync(other, target);
    write(src, "UPDATE issues SET state = 'closed' WHERE number = 2");
    const exit = await exitWithin(f);
    expectGone({ status: exit.status, stdout: '', stderr: f.stderr() }, target);
    expect(dumpTables(target)).toEqual(before);
  });
});
