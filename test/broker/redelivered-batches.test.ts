// batches redelivered to a running subscribe --follow (their acknowledgement late) are skipped, not taken for a stream that went back
import path from 'node:path';
import { spawn } from 'node:child_process';
import { connect, nanos } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { NatsServer } from '../support/nats-server.ts';
import { makeDir, removeDir, trackerSource, dumpTables, startCli, waitFor, scalar, sourceSeq, type Spawned } from '../cli/support/cli.ts';
import { COMMENT_WRITER, publishOnce, sourceIdOf } from './support/broker.ts';
import { defaultStreamName } from '../../src/broker/index.ts';

/*
 * A message the broker delivers again at a stream sequence the subscriber
 * has read (its acknowledgement did not come within the consumer's ack
 * wait) is that message again: the subscriber acknowledges it and goes on.
 * Only another message at a sequence it has read (another Nats-Msg-Id, or
 * one never delivered before) means the stream went back
 * (restored-store-under-follower.test.ts).
 */

function targetSeq(file: string): number {
  try {
    return Number(scalar(file, 'SELECT min(seq) FROM main._sluice_projections'));
  } catch {
    return -1;
  }
}

/** Holds the target's write lock (a writer in another process) until release(): the follower cannot commit, so it acknowledges nothing meanwhile. */
async function holdWriteLock(file: string): Promise<{ release(): Promise<void> }> {
  const child = spawn('python3', [
    '-c',
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
con.execute("COMMIT")`,
    file,
  ]);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => b.toString().includes('locked') && resolve());
    child.on('exit', (code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)));
  });
  return {
    release: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/** Waits (at most 4s: the follower waits 5s for a locked target) until the broker has delivered a message again. */
async function untilRedelivered(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 4000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('the broker delivered no message again within 4s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('batches redelivered to a running subscribe --follow', () => {
  test('are acknowledged and skipped: the follower goes on, applies each event once and says nothing of a stream gone back', async () => {
    const dir = makeDir();
    const server = await NatsServer.start();
    const procs: Spawned[] = [];
    const nc = await connect({ servers: server.url });
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const stream = defaultStreamName(sid);
      const tgt = path.join(dir, 'cache.db');
      const publish = () => publishOnce(src, server.url, { batchSeqs: 5 });
      await publish();
      const sub = startCli(['subscribe', tgt, '--nats', server.url, '--source', sid, '--follow']);
      procs.push(sub);
      runPython(COMMENT_WRITER, [src, '10']);
      await publish();
      await waitFor('the follower to catch up', () => targetSeq(tgt) === sourceSeq(src), 30_000);

      // The follower's consumer waits 1s for an acknowledgement (not 10 minutes) before it delivers a message again.
      const jsm = await jetstreamManager(nc);
      const consumers = await jsm.consumers.list(stream).next();
      expect(consumers).toHaveLength(1);
      const name = consumers[0]?.name ?? '';
      await jsm.consumers.update(stream, name, { ack_wait: nanos(1000) });

      const lock = await holdWriteLock(tgt);
      try {
        runPython(COMMENT_WRITER, [src, '12']);
        await publish(); // delivered, not committed (the target is locked: the follower waits for it), delivered again after 1s
        await untilRedelivered(async () => (await jsm.consumers.info(stream, name)).num_redelivered > 0);
      } finally {
        await lock.release();
      }
      await waitFor(
        'the follower to catch up after the lock',
        () => sub.child.exitCode !== null || targetSeq(tgt) === sourceSeq(src),
        30_000,
      );
      expect(sub.child.exitCode, sub.stderr()).toBeNull();

      runPython(COMMENT_WRITER, [src, '4']); // and it goes on following
      await publish();
      await waitFor('the follower to follow on', () => sub.child.exitCode !== null || targetSeq(tgt) === sourceSeq(src), 30_000);
      expect(sub.child.exitCode, sub.stderr()).toBeNull();
      expect(sub.stderr()).not.toMatch(/went back|planning again/);
      expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments']));
      // Every event applied once.
      expect(scalar(tgt, "SELECT applied_events FROM main._sluice_projections WHERE name = 'comments'")).toBe(BigInt(sourceSeq(src)));

      sub.child.kill('SIGTERM');
      expect((await sub.exited).status, sub.stderr()).toBe(0);
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await nc.close();
      await server.dispose();
      removeDir(dir);
    }
  }, 90_000);
});
