import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { countingWait, sourceWithT, turn } from '../support/counted-source.ts';

/*
 * A follower whose source has been quiet for a while (followSyncer: 10 s
 * without a pass) polls every second instead of four times a second, for
 * what it looks at while idle (onIdle: the files still there, cursors
 * settled, acknowledgements). A commit must still be seen at once: the
 * file watch wakes the follower, not the poll.
 */

test('a quiet wait looks while idle once a second, and still sees each commit at once', async ({ tmp }) => {
  const src = path.join(tmp, 'src.db');
  const w = sourceWithT(src);
  let idle = 0;
  const wait = countingWait(src, { quiet: () => true, onIdle: () => void idle++ });
  // 2.6 s with no commit: the 250 ms poll would have looked about ten times.
  await turn(2_600);
  expect(idle).toBeGreaterThanOrEqual(1);
  expect(idle).toBeLessThanOrEqual(3);
  const ins = w.prepare('INSERT INTO t(v) VALUES (?)');
  const took: number[] = [];
  for (let i = 1; i <= 3; i++) {
    await turn(150 + 200 * i); // at another phase of the poll each time
    const t0 = performance.now();
    ins.run(`r${i}`);
    while (wait.seen() < i && performance.now() - t0 < 2_000) await turn(2);
    took.push(performance.now() - t0);
  }
  await wait.stop();
  // Seen through the watch: a poll once a second would take 0-1000 ms, and all three under 300 ms about one time in 40.
  expect(
    took.every((ms) => ms < 300),
    `ms from commit to pass: ${took.map((ms) => ms.toFixed(1)).join(', ')}`,
  ).toBe(true);
  w.close();
}, 30_000);
