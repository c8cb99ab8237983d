// two publishers of one source each save their position without breaking the other's write of the state file
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { test, expect, describe, runPython, PYTHON } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, startCli, waitFor, sourceSeq, runCliAsync, type Spawned } from '../cli/support/cli.ts';
import { decodeCursor } from '../../src/feed/index.ts';
import { COMMENT_WRITER, defaultStreamName, natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';

/*
 * Two publishers of one source (a second `publish --follow` started by
 * mistake, or a one-shot publish while the follower runs) both save their
 * position in `<db>.publish-<stream>.cursor`. Each wrote it through the one
 * name `<file>.tmp` and renamed that over the file: one renamed the other's
 * temporary file away, and the other died with a raw "ENOENT: ... rename
 * ...cursor.tmp". Each write now has a temporary file of its own: both
 * publishers go on and stop cleanly, and the state file holds a whole
 * cursor the broker acknowledged.
 *
 * The race needs two writes at once, which two publishers seldom make on a
 * fast disk; a Python process that saves the way a publisher did, through
 * `<file>.tmp`, as fast as it can, stands in for a busy one beside them.
 */

/** Python, run as `python3 - FILE STOP`: writes FILE's cursor again through FILE.tmp, over and over, until STOP exists. */
const SAVER = `
import os, sys
file, stop = sys.argv[1], sys.argv[2]
cursor = open(file).read()
while not os.path.exists(stop):
    try:
        with open(file + '.tmp', 'w') as f:
            f.write(cursor)
        os.rename(file + '.tmp', file)
    except OSError:
        pass
`;

const nats = natsForFile();

describe('two publishers of one source', () => {
  test('neither dies on the state file, and it holds a whole cursor', async () => {
    const dir = makeDir();
    const url = nats.server().url;
    const procs: Spawned[] = [];
    const stop = path.join(dir, 'stop');
    let saver: ReturnType<typeof spawn> | undefined;
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const state = `${src}.publish-${defaultStreamName(sourceIdOf(src))}.cursor`;
      await publishOnce(src, url);
      for (let i = 0; i < 2; i++) procs.push(startCli(['publish', src, '--nats', url, '--follow', '--batch', '1']));
      await waitFor('the followers to start', () => procs.every((p) => p.stdout().includes('following')), 30_000);
      saver = spawn(PYTHON, ['-c', SAVER, state, stop], { stdio: 'ignore' });
      const saved = new Promise((resolve) => saver?.on('close', resolve));

      // A steady writer for some seconds (each follower saves its position every 100 ms while it publishes), and
      // one-shot publishes beside the followers.
      const oneShots: ReturnType<typeof runCliAsync>[] = [];
      for (let i = 0; i < 30; i++) {
        runPython(COMMENT_WRITER, [src, '20']);
        if (i % 10 === 5) oneShots.push(runCliAsync(['publish', src, '--nats', url, '--batch', '1']));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const once = await Promise.all(oneShots);
      fs.writeFileSync(stop, '');
      await saved;
      // One commit more: the followers publish it and save their position (the saver left an older one).
      runPython(COMMENT_WRITER, [src, '1']);
      await waitFor(
        'the state file to reach the source',
        () => procs.some((p) => p.child.exitCode !== null) || decodeCursor(fs.readFileSync(state, 'utf8').trim()).seq === sourceSeq(src),
        60_000,
      );
      for (const r of once) {
        expect(r.status, r.stderr).toBe(0);
        expect(r.stderr).not.toMatch(/ENOENT|EEXIST|rename/);
      }
      for (const p of procs) {
        expect(p.child.exitCode, p.stderr()).toBeNull();
        p.child.kill('SIGTERM');
        expect((await p.exited).status, p.stderr()).toBe(0);
        expect(p.stderr()).not.toMatch(/ENOENT|EEXIST|rename/);
      }
      expect(decodeCursor(fs.readFileSync(state, 'utf8').trim()).seq).toBe(sourceSeq(src));
      expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    } finally {
      saver?.kill('SIGKILL');
      for (const p of procs) p.child.kill('SIGKILL');
      removeDir(dir);
    }
  });

  test("a publisher removes the temporary state files a killed one left, and leaves a live process's", async () => {
    const dir = makeDir();
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const state = `${src}.publish-${defaultStreamName(sourceIdOf(src))}.cursor`;
      // A process that has exited: its id names a write that can never finish.
      const gone = spawn(PYTHON, ['-c', 'pass']);
      const deadPid = await new Promise<number>((resolve) => gone.on('close', () => resolve(gone.pid as number)));
      const dead = `${state}.${deadPid}-0a1b2c3d.tmp`;
      const live = `${state}.${process.pid}-0a1b2c3d.tmp`;
      const other = `${state}.notes.tmp`;
      for (const f of [dead, live, other]) fs.writeFileSync(f, 'partial');
      await publishOnce(src, nats.server().url);
      expect([dead, live, other].map((f) => fs.existsSync(f))).toEqual([false, true, true]);
    } finally {
      removeDir(dir);
    }
  });
});
