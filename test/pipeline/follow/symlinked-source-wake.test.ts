import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { waitForChange } from '../../../src/pipeline/follow/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';

/*
 * A source named through a symlink (a data folder linked into place, a
 * deploy's `current` link): SQLite opens the file the link leads to and
 * writes its -wal there, so the follower must watch that folder, not the
 * link's. Watching the link's folder, no commit ever woke it: each waited
 * for the fallback poll (a second once the source had been quiet).
 * The poll here is a minute long, so only the watch can see the commits.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const turn = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a commit to a source opened through a symlink wakes the follower', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-symlink-'));
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, 'real'));
  fs.mkdirSync(path.join(dir, 'link'));
  const real = path.join(dir, 'real', 'src.db');
  const link = path.join(dir, 'link', 'src.db');
  const w = openDatabase(real, { create: true, wal: true });
  w.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
  fs.symlinkSync(path.join('..', 'real', 'src.db'), link);
  const db = openDatabase(link, { readonly: true });
  const count = db.prepare('SELECT count(*) FROM t').pluck();
  const ac = new AbortController();
  let seen = 0;
  const waiting = waitForChange(
    db,
    link,
    () => {
      seen = Number(count.get() as bigint);
    },
    { signal: ac.signal, pollMs: 60_000 },
  );
  const ins = w.prepare('INSERT INTO t(v) VALUES (?)');
  const missed: number[] = [];
  for (let i = 1; i <= 3; i++) {
    await turn(100);
    ins.run(`r${i}`);
    const t0 = performance.now();
    while (seen < i && performance.now() - t0 < 10_000) await turn(5);
    if (seen < i) missed.push(i);
  }
  ac.abort();
  await waiting;
  expect(missed, 'commits no wake brought within 10 s (the poll is a minute)').toEqual([]);
  db.close();
  w.close();
}, 60_000);
