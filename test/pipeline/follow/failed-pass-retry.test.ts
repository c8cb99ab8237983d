// when a follower tries a failed pass again: after 250 ms, doubling to 10 s, ended by a pass without failure
import { test, expect } from '../../support/fixtures.ts';
import { FailedPassRetry } from '../../../src/pipeline/follow/index.ts';

test('a failed pass is due again after 250 ms, then twice as long each time, at most 10 s; a pass without such a failure ends it', () => {
  const r = new FailedPassRetry();
  expect(r.due(0)).toBe(false);
  r.passed(false, 0);
  expect(r.due(1e9)).toBe(false);
  const waits: number[] = [];
  let now = 0;
  for (let i = 0; i < 8; i++) {
    r.passed(true, now);
    let at = now;
    while (!r.due(at)) at += 1;
    waits.push(at - now);
    now = at;
  }
  expect(waits).toEqual([250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
  r.passed(false, now);
  expect(r.due(now + 1e9)).toBe(false);
  r.passed(true, now);
  expect(r.due(now + 249)).toBe(false);
  expect(r.due(now + 250)).toBe(true);
});
