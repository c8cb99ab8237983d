import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { waitForChange } from '../../../src/pipeline/follow/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';

/*
 * A follower whose source has been quiet for a while (followSyncer: 10 s
 * without a pass) polls every second instead of four times a second, for
 * what it looks at while idle (onIdle: the files still there, cursors
 * settled, acknowledgements). A commit must still be seen at once: the
 * file watch wakes the follower, not the poll.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const turn = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a quiet wait looks while idle once a second, and still sees each commit at once', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-quiet-'));
  dirs.push(dir);
  const src = path.join(dir, 'src.db');
  const w = openDatabase(src, { create: true, wal: true });
  w.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
  const db = openDatabase(src, { readonly: true });
  const count = db.prepare('SELECT count(*) FROM t').pluck();
  const ac = new AbortController();
  let seen = 0;
  let idle = 0;
  const waiting = waitForChange(
    db,
    src,
    () => {
      seen = Number(count.get() as bigint);
    },
    { signal: ac.signal, quiet: () => true, onIdle: () => void idle++ },
  );
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
    while (seen < i && performance.now() - t0 < 2_000) await turn(2);
    took.push(performance.now() - t0);
  }
  ac.abort();
  await waiting;
  // Seen through the watch: a poll once a second would take 0-1000 ms, and all three under 300 ms about one time in 40.
  expect(
    took.every((ms) => ms < 300),
    `ms from commit to pass: ${took.map((ms) => ms.toFixed(1)).join(', ')}`,
  ).toBe(true);
  db.close();
  w.close();
}, 30_000);
