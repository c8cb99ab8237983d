import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { waitForChange } from '../../../src/pipeline/follow/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';

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

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const turn = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a wake that finds no commit under way does not wait for one', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-wake-idle-'));
  dirs.push(dir);
  const src = path.join(dir, 'src.db');
  const w = openDatabase(src, { create: true, wal: true });
  w.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
  const db = openDatabase(src, { readonly: true });
  const count = db.prepare('SELECT count(*) FROM t').pluck();
  const ac = new AbortController();
  let seen = 0;
  let spins = 0;
  const waiting = waitForChange(
    db,
    src,
    () => {
      seen = Number(count.get() as bigint);
    },
    { signal: ac.signal, onSpin: () => spins++ },
  );
  const ins = w.prepare('INSERT INTO t(v) VALUES (?)');
  for (let i = 1; i <= 20; i++) {
    ins.run(`r${i}`);
    for (let k = 0; k < 200 && seen < i; k++) await turn(5);
    expect(seen).toBe(i); // every commit brings a pass
    // A checkpoint writes the database file (a wake) and publishes nothing.
    w.pragma('wal_checkpoint(PASSIVE)');
    await turn(20);
  }
  ac.abort();
  await waiting;
  // Each of these wakes found nothing under way: no wait for a commit (the old wait spun on each).
  expect(spins).toBe(0);
  db.close();
  w.close();
}, 60_000);
