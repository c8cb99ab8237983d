// a subscriber part-way through a snapshot that leaves the stream (purged by publish) plans again from the stream's newest snapshot
import path from 'node:path';
import { createHash } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { NatsServer } from '../support/nats-server.ts';
import { makeDir, removeDir, runCliAsync, startCli, waitFor, scalar, type Spawned } from '../cli/support/cli.ts';
import { defaultStreamName, sourceIdOf } from './support/broker.ts';

/*
 * A subscriber starting from a snapshot waited for the rest of the snapshot
 * it had started (its Sluice-Snapshot id), and acknowledged and skipped
 * every other message of its source. When the stream no longer holds that
 * rest (publish purged it: a re-arm that leaves a column out of capture
 * publishes a new snapshot and purges what came before; or retention
 * dropped it), it skipped the new snapshot and every batch after it: a
 * one-shot run exited 0, "applied 0 batches", leaving a target with no
 * projection and no table, and a follower applied nothing, ever, while the
 * source changed. The reader now notices that the snapshot it reads is gone
 * (a message of its source after the snapshot's end, or a part missing) and
 * subscribe plans again from the target's cursor: from the stream's newest
 * snapshot.
 *
 * The server's max_payload is small, so the snapshot is many parts; each
 * subscriber is stopped (SIGSTOP) as soon as its consumer exists, before it
 * can have read the whole snapshot, and let go (SIGCONT) once publish has
 * purged it.
 */

const ROWS = 40_000;

let server: NatsServer | undefined;
beforeAll(async () => {
  server = await NatsServer.start({ config: 'max_payload: 20000\n' });
}, 30_000);
afterAll(async () => {
  await server?.dispose();
});

/** The durable consumer subscribe makes for `target` (subscribe-plan.ts freshConsumer). */
function consumerOf(target: string): string {
  return `sluice_${createHash('sha256').update(path.resolve(target)).digest('hex').slice(0, 20)}`;
}

/** Stops `p` (SIGSTOP) as soon as its consumer of `stream` exists. */
async function stopOnceConsuming(url: string, stream: string, target: string, p: Spawned): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const info = await jsm.consumers.info(stream, consumerOf(target)).catch(() => undefined);
      if (info !== undefined) break;
      if (p.child.exitCode !== null) throw new Error(`subscribe ${target} ended before it was stopped: ${p.stderr()}`);
      if (Date.now() > deadline) throw new Error(`subscribe ${target} made no consumer: ${p.stderr()}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    p.child.kill('SIGSTOP');
  } finally {
    await nc.close();
  }
}

describe('a subscriber part-way through a snapshot that publish purges', () => {
  test('a one-shot run and a follower each start again from the newest snapshot and end with the source', async () => {
    const dir = makeDir();
    const procs: Spawned[] = [];
    try {
      const url = (server as NatsServer).url;
      const src = path.join(dir, 'src.db');
      runSqliteCli(src, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, secret TEXT);');
      const cli = async (...args: string[]) => {
        const r = await runCliAsync(args);
        expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
        return r;
      };
      await cli('enable', src, 't', '--exclude', 'secret');
      const sid = sourceIdOf(src);
      const stream = defaultStreamName(sid);
      runPython(
        `import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executemany('INSERT INTO t VALUES (?, ?, ?)', [(i, ('v%d' % i) * 20, 's') for i in range(${ROWS})])
c.commit()`,
        [src],
      );
      await cli('publish', src, '--nats', url); // a snapshot of some thousands of parts

      const oneShot = path.join(dir, 'one.db');
      const follower = path.join(dir, 'fol.db');
      const one = startCli(['subscribe', oneShot, '--nats', url, '--source', sid]);
      procs.push(one);
      await stopOnceConsuming(url, stream, oneShot, one);
      const fol = startCli(['subscribe', follower, '--nats', url, '--source', sid, '--follow']);
      procs.push(fol);
      await stopOnceConsuming(url, stream, follower, fol);

      // A column newly left out: publish publishes a new snapshot and purges the one they were reading.
      await cli('enable', src, 't', '--exclude', 'secret,v');
      runSqliteCli(src, `INSERT INTO t VALUES (${ROWS}, 'new', 's');`);
      const pub = await cli('publish', src, '--nats', url);
      expect(pub.stderr).toMatch(/purged the \d+ messages/);
      for (const p of procs) p.child.kill('SIGCONT');

      const ended = await one.exited;
      expect(ended.status, one.stderr()).toBe(0);
      expect(Number(scalar(oneShot, 'SELECT count(*) FROM t'))).toBe(ROWS + 1);

      for (let i = 1; i <= 3; i++) {
        runSqliteCli(src, `INSERT INTO t VALUES (${ROWS + i}, 'n', 's');`);
        await cli('publish', src, '--nats', url);
      }
      await waitFor('the follower to catch up', () => Number(scalar(follower, 'SELECT count(*) FROM t')) === ROWS + 4, 60_000);
      fol.child.kill('SIGTERM');
      expect((await fol.exited).status, fol.stderr()).toBe(0);
      for (const t of [oneShot, follower]) expect(scalar(t, "SELECT group_concat(name) FROM pragma_table_info('t')"), t).toBe('id');
      // Each said why it started again.
      for (const p of [one, fol]) expect(p.stderr()).toMatch(/snapshot .* is gone from .*planning again/);
    } finally {
      for (const p of procs)
        if (p.child.exitCode === null && p.child.signalCode === null) {
          p.child.kill('SIGCONT');
          p.child.kill('SIGKILL');
        }
      removeDir(dir);
    }
  }, 180_000);

  for (const which of ['a middle part', 'its last part'] as const)
    test(`a snapshot with ${which} deleted from the stream is refused (BROKER_NO_SNAPSHOT), not applied, not read for ever`, async () => {
      const dir = makeDir();
      try {
        const url = (server as NatsServer).url;
        const src = path.join(dir, 'src.db');
        runSqliteCli(
          src,
          "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000) INSERT INTO t SELECT i, printf('%0100d', i) FROM c;",
        );
        const enabled = await runCliAsync(['enable', src, 't']);
        expect(enabled.status, enabled.stderr).toBe(0);
        const sid = sourceIdOf(src);
        const stream = defaultStreamName(sid);
        const published = await runCliAsync(['publish', src, '--nats', url]);
        expect(published.status, published.stderr).toBe(0);
        const nc = await connect({ servers: url });
        try {
          const jsm = await jetstreamManager(nc);
          const end = await jsm.streams.getMessage(stream, { last_by_subj: `sluice.${sid}.snapshot.end` });
          const first = Number(end?.header.get('Sluice-Snapshot-Start'));
          const parts = (end?.seq ?? 0) - first;
          expect(parts).toBeGreaterThan(10);
          await jsm.streams.deleteMessage(stream, which === 'a middle part' ? first + Math.floor(parts / 2) : (end?.seq ?? 0) - 1);
        } finally {
          await nc.close();
        }
        const target = path.join(dir, 'tgt.db');
        const sub = await runCliAsync(['subscribe', target, '--nats', url, '--source', sid]);
        expect(sub.status, sub.stderr).toBe(1);
        expect(sub.stderr).toContain('BROKER_NO_SNAPSHOT');
        expect(sub.stderr).toMatch(which === 'a middle part' ? /its part \d+ did not come/ : /its end counts \d+ parts/);
        expect(scalar(target, "SELECT count(*) FROM sqlite_schema WHERE name = 't'")).toBe(0n);
      } finally {
        removeDir(dir);
      }
    }, 60_000);
});
