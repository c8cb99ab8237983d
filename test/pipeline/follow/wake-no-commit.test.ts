import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { countingWait, sourceWithT, turn } from '../support/counted-source.ts';

/*
 * A write to the source's files wakes a follower; when the wake finds no
 * commit published yet, the follower waits for one with short sleeps
 * (wait.ts), which only pays when a commit is under way. A commit's later
 * frames (their events come after the pass that applied it) and a
 * checkpoint's writes to the database file are no commit: the follower
 * looks at the log (WalFiles.pending) and goes back to waiting. It used to
 * sleep about 0.6 ms on each, at every commit, and a commit that landed
 * meanwhile waited for the sleep to end.
 */

test('a wake that finds no commit under way does not wait for one', async ({ tmp }) => {
  const src = path.join(tmp, 'src.db');
  const w = sourceWithT(src);
  let spins = 0;
  const wait = countingWait(src, { onSpin: () => spins++ });
  const ins = w.prepare('INSERT INTO t(v) VALUES (?)');
  for (let i = 1; i <= 20; i++) {
    ins.run(`r${i}`);
    for (let k = 0; k < 200 && wait.seen() < i; k++) await turn(5);
    expect(wait.seen()).toBe(i); // every commit brings a pass
    // A checkpoint writes the database file (a wake) and publishes nothing.
    w.pragma('wal_checkpoint(PASSIVE)');
    await turn(20);
  }
  await wait.stop();
  // Each of these wakes found nothing under way: no wait for a commit (the old wait spun on each).
  expect(spins).toBe(0);
  w.close();
}, 60_000);
