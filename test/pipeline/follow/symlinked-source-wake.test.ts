import fs from 'node:fs';
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { countingWait, sourceWithT, turn } from '../support/counted-source.ts';

/*
 * A source named through a symlink (a data folder linked into place, a
 * deploy's `current` link): SQLite opens the file the link leads to and
 * writes its -wal there, so the follower must watch that folder, not the
 * link's. Watching the link's folder, no commit ever woke it: each waited
 * for the fallback poll (a second once the source had been quiet).
 * The poll here is a minute long, so only the watch can see the commits.
 */

test('a commit to a source opened through a symlink wakes the follower', async ({ tmp }) => {
  fs.mkdirSync(path.join(tmp, 'real'));
  fs.mkdirSync(path.join(tmp, 'link'));
  const real = path.join(tmp, 'real', 'src.db');
  const link = path.join(tmp, 'link', 'src.db');
  const w = sourceWithT(real);
  fs.symlinkSync(path.join('..', 'real', 'src.db'), link);
  const wait = countingWait(link, { pollMs: 60_000 });
  const ins = w.prepare('INSERT INTO t(v) VALUES (?)');
  const missed: number[] = [];
  for (let i = 1; i <= 3; i++) {
    await turn(100);
    ins.run(`r${i}`);
    const t0 = performance.now();
    while (wait.seen() < i && performance.now() - t0 < 10_000) await turn(5);
    if (wait.seen() < i) missed.push(i);
  }
  await wait.stop();
  expect(missed, 'commits no wake brought within 10 s (the poll is a minute)').toEqual([]);
  w.close();
}, 60_000);
