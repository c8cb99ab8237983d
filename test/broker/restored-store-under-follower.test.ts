// publish --follow running while the broker's store is restored from an older copy publishes again what the stream lost
import fs from 'node:fs';
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { NatsServer } from '../support/nats-server.ts';
import {
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  runCliAsync,
  startCli,
  sourceSeq,
  scalar,
  waitFor,
  type Spawned,
} from '../cli/support/cli.ts';
import { COMMENT_WRITER, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName, Publisher, subjectsOf } from '../../src/broker/index.ts';

/*
 * The broker's store is restored from an older copy (nats-server stopped,
 * its store directory put back from a backup, started again) under a
 * running `publish --follow`. The client reconnects by itself, and the
 * publisher went on from the position it held in memory: the first message
 * of its next pass, which expected only the stream's name, was stored after
 * the restored stream's last batch, leaving a hole where the lost batches
 * were. A new subscriber applied the snapshot and stopped there
 * (BATCH_GAP). Now the first message of a pass expects the stream sequence
 * of the last message this publisher had acknowledged on its subject; the
 * broker refuses it on the restored stream, and the publisher goes on from
 * what the stream holds, saying why, publishing the lost range again.
 *
 * A copy the broker already has is acknowledged as a duplicate whatever the
 * expectation (the broker checks its dedup window first); a batch refused
 * because another publisher of the source went further goes on from where
 * the stream reaches, saying nothing of a loss.
 */

/** The seq the stream's last batch reaches (0: none), read as an operator would. */
async function streamReaches(url: string, stream: string, subject: string): Promise<number> {
  const nc = await connect({ servers: url, reconnect: false });
  try {
    const jsm = await jetstreamManager(nc);
    const m = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null);
    return m === null ? 0 : Number(m.header?.get('Sluice-To-Seq'));
  } finally {
    await nc.close();
  }
}

async function untilReached(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function targetSeq(file: string): number {
  try {
    return Number(scalar(file, 'SELECT min(seq) FROM main._sluice_projections'));
  } catch {
    return -1;
  }
}

describe('a broker store restored from an older copy under a running publish --follow', () => {
  test('the publisher publishes again the range the stream lost; a new subscriber ends equal to a sync', async () => {
    const dir = makeDir();
    const store = path.join(dir, 'js');
    const backup = path.join(dir, 'js-backup');
    fs.mkdirSync(store);
    const server = await NatsServer.start({ storeDir: store });
    const procs: Spawned[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const stream = defaultStreamName(sid);
      const batch = subjectsOf(sid).batch;
      const published = () =>
        untilReached(
          'the publisher to publish every write',
          async () => (await streamReaches(server.url, stream, batch)) === sourceSeq(src),
        );

      const pub = startCli(['publish', src, '--nats', server.url, '--batch', '10', '--follow']);
      procs.push(pub);
      await waitFor('the first snapshot', () => pub.stderr().includes('published a snapshot'), 30_000);

      runPython(COMMENT_WRITER, [src, '15']);
      await published();

      await server.stop();
      fs.cpSync(store, backup, { recursive: true }); // a backup of the broker's store
      const backedUp = sourceSeq(src);
      await server.restart();
      runPython(COMMENT_WRITER, [src, '17']);
      await published(); // batches the backup does not hold

      await server.stop();
      fs.rmSync(store, { recursive: true });
      fs.cpSync(backup, store, { recursive: true }); // the store is restored from the backup
      await server.restart();
      runPython(COMMENT_WRITER, [src, '12']);
      await published();

      const synced = path.join(dir, 'synced.db');
      const s = await runCliAsync(['sync', src, synced]);
      expect(s.status, s.stderr).toBe(0);
      const fresh = path.join(dir, 'fresh.db');
      const sub = await runCliAsync(['subscribe', fresh, '--nats', server.url, '--source', sid]);
      expect(sub.status, sub.stderr).toBe(0);
      expect(targetSeq(fresh)).toBe(sourceSeq(src));
      expect(dumpTables(fresh)).toEqual(dumpTables(synced));
      expect(pub.stderr()).toContain(`stream ${stream} reaches only seq ${backedUp}`);
      expect(pub.stderr()).toMatch(/the stream lost its last messages .*; publishing again from there/);

      pub.child.kill('SIGTERM');
      expect((await pub.exited).status, pub.stderr()).toBe(0);
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await server.dispose();
      removeDir(dir);
    }
  }, 180_000);

  test('a subscribe --follow that had passed the restored position plans again from its cursor and ends equal to a sync, without stopping', async () => {
    const dir = makeDir();
    const store = path.join(dir, 'js');
    const backup = path.join(dir, 'js-backup');
    fs.mkdirSync(store);
    const server = await NatsServer.start({ storeDir: store });
    const procs: Spawned[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const stream = defaultStreamName(sid);
      const batch = subjectsOf(sid).batch;
      const tgt = path.join(dir, 'cache.db');
      const published = () =>
        untilReached(
          'the publisher to publish every write',
          async () => (await streamReaches(server.url, stream, batch)) === sourceSeq(src),
        );

      const pub = startCli(['publish', src, '--nats', server.url, '--batch', '10', '--follow']);
      procs.push(pub);
      await waitFor('the first snapshot', () => pub.stderr().includes('published a snapshot'), 30_000);
      const sub = startCli(['subscribe', tgt, '--nats', server.url, '--source', sid, '--follow']);
      procs.push(sub);
      const caughtUp = (what: string, timeoutMs = 30_000) =>
        waitFor(what, () => sub.child.exitCode !== null || targetSeq(tgt) === sourceSeq(src), timeoutMs).then(() =>
          expect(sub.child.exitCode, sub.stderr()).toBeNull(),
        );

      runPython(COMMENT_WRITER, [src, '15']);
      await published();
      await caughtUp('the follower to catch up');

      await server.stop();
      fs.cpSync(store, backup, { recursive: true }); // a backup of the broker's store (the follower's consumer in it)
      await server.restart();
      runPython(COMMENT_WRITER, [src, '17']);
      await published(); // batches the backup does not hold
      await caughtUp('the follower to pass the position the backup holds');
      const passed = targetSeq(tgt);

      await server.stop();
      fs.rmSync(store, { recursive: true });
      fs.cpSync(backup, store, { recursive: true }); // the store is restored from the backup
      await server.restart();
      runPython(COMMENT_WRITER, [src, '12']);
      await published(); // the lost range published again, under stream sequences the follower has seen
      runPython(COMMENT_WRITER, [src, '25']);
      await published(); // past the stream sequences the follower saw before the restore
      await caughtUp('the follower to follow the restored stream', 20_000);
      expect(targetSeq(tgt)).toBeGreaterThan(passed);

      const synced = path.join(dir, 'synced.db');
      const s = await runCliAsync(['sync', src, synced]);
      expect(s.status, s.stderr).toBe(0);
      expect(dumpTables(tgt)).toEqual(dumpTables(synced));
      expect(sub.stderr()).toMatch(new RegExp(`stream ${stream} went back`));
      const h = await runCliAsync(['health', tgt, '--nats', server.url]);
      expect(h.status, h.stdout + h.stderr).toBe(0);

      for (const p of [pub, sub]) p.child.kill('SIGTERM');
      const [pe, se] = await Promise.all([pub.exited, sub.exited]);
      expect(pe.status, pub.stderr()).toBe(0);
      expect(se.status, sub.stderr()).toBe(0);
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await server.dispose();
      removeDir(dir);
    }
  }, 180_000);

  test('a pass whose first batch the stream has already (a duplicate) is acknowledged as one, though the stream has more on its subject since', async () => {
    const dir = makeDir();
    const server = await NatsServer.start();
    const logs: string[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      // Two publishers of one source, both opened before the batches: the second one's expectation of the subject goes stale.
      const first = await Publisher.open(src, server.url, { batchSeqs: 10 });
      await first.runOnce(); // the snapshot
      runPython(COMMENT_WRITER, [src, '25']);
      const second = await Publisher.open(src, server.url, { batchSeqs: 10, log: (l) => logs.push(l) });
      try {
        expect((await first.runOnce()).batches).toBe(3);
        // The same three batches: duplicates, though the stream's last message on their subject is not the one it expects.
        expect(await second.runOnce()).toMatchObject({ batches: 3, duplicates: 3 });
        runPython(COMMENT_WRITER, [src, '5']);
        expect(await second.runOnce()).toMatchObject({ batches: 1, duplicates: 0 });
        runPython(COMMENT_WRITER, [src, '3']);
        // Its first batch is the one the second published (a duplicate, acknowledged so); the next goes on after it.
        expect(await first.runOnce()).toMatchObject({ batches: 2, duplicates: 1 });
        expect(logs.join('\n')).not.toMatch(/reaches only seq/);
      } finally {
        await second.close();
        await first.close();
      }
      const batches = (await streamMessages(server.url, defaultStreamName(sid))).filter((m) => m.subject === subjectsOf(sid).batch);
      const ranges = batches.map((m) => [Number(m.header?.get('Sluice-From-Seq')), Number(m.header?.get('Sluice-To-Seq'))]);
      expect(ranges).toEqual([
        [0, 10],
        [10, 20],
        [20, 25],
        [25, 30],
        [30, 33],
      ]);
    } finally {
      await server.dispose();
      removeDir(dir);
    }
  }, 60_000);

  test('a batch refused because another publisher of the source went further on the subject goes on from the stream, saying nothing of a loss', async () => {
    const dir = makeDir();
    const server = await NatsServer.start();
    const logs: string[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const first = await Publisher.open(src, server.url, { batchSeqs: 10 });
      await first.runOnce(); // the snapshot
      runPython(COMMENT_WRITER, [src, '25']);
      const second = await Publisher.open(src, server.url, { batchSeqs: 10, log: (l) => logs.push(l) });
      try {
        expect((await first.runOnce()).batches).toBe(3); // (0,10], (10,20], (20,25]
        runPython(COMMENT_WRITER, [src, '5']);
        // (0,10] and (10,20] are duplicates; its (20,30] is refused (the stream's last message is (20,25], not (10,20]),
        // and again sent alone (its subject's last is not (10,20]): it goes on from (20,25], with (25,30].
        expect(await second.runOnce()).toMatchObject({ batches: 3, duplicates: 2 });
        expect(logs.join('\n')).not.toMatch(/reaches only seq/);
        runPython(COMMENT_WRITER, [src, '3']);
        expect(await first.runOnce()).toMatchObject({ batches: 2, duplicates: 1 }); // (25,30] is the other's, (30,33]
      } finally {
        await second.close();
        await first.close();
      }
      const batches = (await streamMessages(server.url, defaultStreamName(sid))).filter((m) => m.subject === subjectsOf(sid).batch);
      // Contiguous, each range once: no (20,30] over (20,25].
      expect(batches.map((m) => [Number(m.header?.get('Sluice-From-Seq')), Number(m.header?.get('Sluice-To-Seq'))])).toEqual([
        [0, 10],
        [10, 20],
        [20, 25],
        [25, 30],
        [30, 33],
      ]);
    } finally {
      await server.dispose();
      removeDir(dir);
    }
  }, 60_000);
});
