// a commit that lands as a publishers first pass ends reaches the subscriber within seconds
import path from 'node:path';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { test, expect, describe, PYTHON } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, startCli, waitFor, scalar, write, type Spawned } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';

/*
 * A follower never sleeps on a commit it has not published. publish --follow
 * starts on a quiet source with one event to publish; an external writer
 * (Python's sqlite3) commits the next one the moment a subscriber's target
 * shows that event, which is when the publisher's first pass ends and its
 * wait for the source begins. Where the wait took its starting point after
 * the pass, such a commit was taken as seen and waited for the next unrelated
 * commit; every one must reach the target within a few seconds.
 */

const nats = natsForFile();
const TRIALS = 12;

/**
 * Reads a trial number k and a delay on stdin, waits until the target's
 * comment 1 says v<k>, then, after the delay (0 to 3 ms: the moment, and a
 * little after it, so that the trials cover the end of the pass on a busy
 * machine too), commits v<k+1> to the source.
 */
const REACTOR = `
import sqlite3, sys, time
src, tgt = sys.argv[1], sys.argv[2]
s = sqlite3.connect(src, isolation_level=None, timeout=10)
t = sqlite3.connect(tgt, isolation_level=None, timeout=10)
for line in sys.stdin:
    k, d = line.split()
    k = int(k)
    while True:
        row = t.execute("SELECT body FROM comments WHERE id = 1").fetchone()
        if row is not None and row[0] == 'v%d' % k:
            break
        time.sleep(0.0002)
    time.sleep(float(d) / 1000)
    s.execute("UPDATE comments SET body = ? WHERE id = 1", ('v%d' % (k + 1),))
    sys.stdout.write('%d\\n' % k)
    sys.stdout.flush()
`;

const body = (tgt: string) => String(scalar(tgt, 'SELECT body FROM comments WHERE id = 1'));

describe('a commit at the end of a publisher first pass', () => {
  test(`reaches the subscriber within 5 s, ${TRIALS} times out of ${TRIALS}`, async () => {
    const dir = makeDir();
    const url = nats.server().url;
    const procs: Spawned[] = [];
    const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
    const tgt = path.join(dir, 'cache.db');
    write(src, "UPDATE comments SET body = 'start' WHERE id = 1");
    // The first publish (the snapshot) is the setup: through the library the CLI runs.
    await publishOnce(src, url);
    const sub = startCli(['subscribe', tgt, '--nats', url, '--source', sourceIdOf(src), '--follow']);
    procs.push(sub);
    await waitFor('the subscriber to apply the snapshot', () => body(tgt) === 'start', 30_000);
    const reactor = spawn(PYTHON, ['-u', '-c', REACTOR, src, tgt], { stdio: ['pipe', 'pipe', 'pipe'] });
    let reactorErr = '';
    reactor.stderr.setEncoding('utf8').on('data', (d: string) => (reactorErr += d));
    const reacted: number[] = [];
    createInterface({ input: reactor.stdout }).on('line', (l) => reacted.push(Number(l)));
    const missed: number[] = [];
    try {
      for (let i = 0; i < TRIALS; i++) {
        const k = 2 * i;
        // Committed while no publisher runs: the one event the next publisher's first pass publishes.
        write(src, `UPDATE comments SET body = 'v${k}' WHERE id = 1`);
        reactor.stdin.write(`${k} ${i % 4}\n`);
        const pub = startCli(['publish', src, '--nats', url, '--follow']);
        procs.push(pub);
        await waitFor(`the reactor to commit v${k + 1} (${reactorErr})`, () => reacted.includes(k), 30_000, 5);
        try {
          await waitFor(`v${k + 1} in the target`, () => body(tgt) === `v${k + 1}`, 5000, 10);
        } catch {
          missed.push(k + 1);
          // Another commit wakes the publisher (as an unrelated commit did in the field), so the next trial starts clean.
          write(src, "UPDATE comments SET body = body || '.' WHERE id = 2");
          await waitFor(`v${k + 1} in the target after another commit`, () => body(tgt) === `v${k + 1}`, 30_000);
        }
        pub.child.kill('SIGTERM');
        const e = await pub.exited;
        expect(e.status, pub.stderr()).toBe(0);
      }
      expect(missed, `commits published only once another commit came: ${missed.join(', ')}`).toEqual([]);
    } finally {
      reactor.kill('SIGKILL');
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      removeDir(dir);
    }
  }, 120_000);
});
