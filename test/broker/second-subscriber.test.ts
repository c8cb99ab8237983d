// a second subscriber of a target is refused and a killed one does not keep it
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import {
  makeDir,
  removeDir,
  trackerSource,
  startCli,
  waitFor,
  scalar,
  sourceSeq,
  runCliAsync,
  expectOneLineError,
  dumpTables,
  type Spawned,
  projectionSeq,
} from '../cli/support/cli.ts';
import { COMMENT_WRITER, natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';

/*
 * One subscriber per target. Two subscribers of one target would share its
 * durable consumer (each run makes it again at its own start), and the first
 * stalled silently once the second stopped. A second subscriber, following
 * or not, is refused with one line naming the target, the running one and
 * the fix, and touches nothing: the first one goes on applying. A follower
 * killed with SIGKILL does not keep the target from the next one.
 */

const nats = natsForFile();

describe('two subscribers of one target', () => {
  test('the second is refused and the first goes on; after a SIGKILL the next one starts', async () => {
    const dir = makeDir();
    const url = nats.server().url;
    const procs: Spawned[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const tgt = path.join(dir, 'cache.db');
      // The publisher is this test's setup: the library the CLI runs (`sluice publish SRC --nats URL --batch 10`).
      const publish = () => publishOnce(src, url, { batchSeqs: 10 });
      await publish();
      const first = startCli(['subscribe', tgt, '--nats', url, '--source', sid, '--follow']);
      procs.push(first);
      await waitFor('the first subscriber to apply the snapshot', () => projectionSeq(tgt, 'comments') === 0, 30_000);

      const [following, once] = await Promise.all([
        runCliAsync(['subscribe', tgt, '--nats', url, '--source', sid, '--follow']),
        runCliAsync(['subscribe', tgt, '--nats', url, '--source', sid]),
      ]);
      for (const r of [following, once]) {
        expect(r.status, r.stderr).toBe(1);
        expectOneLineError(r, 'TARGET_FOLLOWED');
        expect(r.stderr).toContain(tgt);
        expect(r.stderr).toContain(`process ${first.child.pid} (subscribe --follow`);
        expect(r.stderr).toContain(`kill ${first.child.pid}`);
      }

      // The refused ones made nothing again under the first: it goes on applying what is published.
      runPython(COMMENT_WRITER, [src, '25']);
      await publish();
      await waitFor('the first subscriber to apply the new batches', () => projectionSeq(tgt, 'comments') === sourceSeq(src), 30_000);
      expect(first.child.exitCode).toBeNull();

      first.child.kill('SIGKILL');
      await first.exited;
      const next = startCli(['subscribe', tgt, '--nats', url, '--source', sid, '--follow']);
      procs.push(next);
      runPython(COMMENT_WRITER, [src, '5']);
      await publish();
      await waitFor(
        'the next subscriber to apply',
        () => next.child.exitCode !== null || projectionSeq(tgt, 'comments') === sourceSeq(src),
        30_000,
      );
      expect(next.child.exitCode, next.stderr()).toBeNull();
      next.child.kill('SIGTERM');
      expect((await next.exited).status, next.stderr()).toBe(0);
      expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments']));
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      removeDir(dir);
    }
  }, 120_000);
});
