// when a follower tries a failed pass again: after 250 ms, doubling to 10 s, ended by a pass without failure
import { test, expect } from '../../support/fixtures.ts';
import { FailedPassRetry } from '../../../src/pipeline/follow/index.ts';
import type { SyncReport } from '../../../src/apply/sync/index.ts';

const report = (failed: boolean): SyncReport =>
  ({
    sourceSeq: 1,
    projections: [
      {
        name: 'p',
        state: 'active',
        applied: 0,
        cursor: null,
        seq: 0,
        ...(failed ? { error: { code: 'APPLY_FAILED', message: 'down' } } : {}),
      },
    ],
  }) as unknown as SyncReport;

test('a failed pass is due again after 250 ms, then twice as long each time, at most 10 s; a clean pass ends it', () => {
  const r = new FailedPassRetry();
  expect(r.due(0)).toBe(false);
  r.passed(report(false), 0);
  expect(r.due(1e9)).toBe(false);
  const waits: number[] = [];
  let now = 0;
  for (let i = 0; i < 8; i++) {
    r.passed(report(true), now);
    let at = now;
    while (!r.due(at)) at += 1;
    waits.push(at - now);
    now = at;
  }
  expect(waits).toEqual([250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
  r.passed(report(false), now);
  expect(r.due(now + 1e9)).toBe(false);
  r.passed(report(true), now);
  expect(r.due(now + 249)).toBe(false);
  expect(r.due(now + 250)).toBe(true);
});
