// a program that opens and closes the source all the time does not keep a follower from its idle looks
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { countingWait, sourceWithT, turn } from '../support/counted-source.ts';

/*
 * A follower does its idle work (onIdle: writing the acknowledgements it
 * holds, the look for hand edits of the target, a target deleted, the
 * definitions changed, a failed pass tried again) when a poll interval
 * passes with no wake. Each open and close of the source by another
 * program (a web app that connects per request; a test polling it) writes
 * its -wal, which wakes the watch, and finds no commit: with such a
 * program reading every 25 ms the poll never ran out and none of that work
 * ever ran. `sluice run` left a target's acknowledgements unwritten for as
 * long as a reader polled the source.
 */

test('with a reader opening and closing the source every 20 ms, onIdle still runs about once per poll interval', async ({ tmp }) => {
  const src = path.join(tmp, 'src.db');
  const w = sourceWithT(src);
  w.prepare('INSERT INTO t(v) VALUES (?)').run('one');
  let idle = 0;
  const wait = countingWait(src, { onIdle: () => void idle++ });
  for (let k = 0; k < 200 && wait.seen() < 1; k++) await turn(5);
  expect(wait.seen()).toBe(1);
  const from = idle;
  const until = Date.now() + 2000;
  let opened = 0;
  while (Date.now() < until) {
    const r = openDatabase(src, { readonly: true });
    r.prepare('SELECT count(*) FROM t').get();
    r.close();
    opened++;
    await turn(20);
  }
  const calls = idle - from;
  await wait.stop();
  w.close();
  expect(opened).toBeGreaterThan(20);
  // About 8 in 2 s at one per 250 ms; none at all before the fix.
  expect(calls).toBeGreaterThanOrEqual(4);
}, 30_000);
