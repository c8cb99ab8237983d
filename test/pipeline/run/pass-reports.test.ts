// a run workers pass reports merge passes that only applied and send any other at once
import { test, expect } from '../../support/fixtures.ts';
import { PassReports, PASS_REPORT_MS } from '../../../src/pipeline/run/index.ts';
import type { MetricsRecord } from '../../../src/pipeline/index.ts';

/*
 * A target's worker in `sluice run` runs a pass per source commit and
 * used to post one message per pass to the main thread. PassReports merges
 * the passes that only applied: /metrics must count the same events and
 * batches, and what the part's state and /healthz hang on (the first pass,
 * a suspension, an error) must not wait.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const active = (applied: number, lastCommitMs: number): MetricsRecord[] => [
  { name: 'a', state: 'active', applied, batches: 1, lastCommitMs },
  { name: 'b', state: 'active', applied: applied * 2, batches: 1, lastCommitMs },
];

test('passes that only applied are merged with the same sums, and the first, a suspension or an error is sent at once', async () => {
  const sent: (readonly MetricsRecord[])[] = [];
  const reports = new PassReports((p) => sent.push(p));
  reports.add(active(1, 10));
  expect(sent).toHaveLength(1); // the first pass: at once
  for (let i = 0; i < 50; i++) reports.add(active(1, 11 + i));
  expect(sent).toHaveLength(1); // held
  await sleep(PASS_REPORT_MS * 3);
  expect(sent).toHaveLength(2);
  expect(sent[1]).toEqual([
    { name: 'a', state: 'active', applied: 50, batches: 50, lastCommitMs: 60 },
    { name: 'b', state: 'active', applied: 100, batches: 50, lastCommitMs: 60 },
  ]);

  reports.add(active(3, 70));
  const suspended: MetricsRecord[] = [
    { name: 'a', state: 'suspended', reason: 'TARGET_EDITED', applied: 0 },
    { name: 'b', state: 'active', applied: 1, batches: 1, lastCommitMs: 71 },
  ];
  reports.add(suspended);
  // What was held goes first, then the suspension, both at once.
  expect(sent.slice(2)).toEqual([active(3, 70), suspended]);

  const failed: MetricsRecord[] = [
    { name: 'a', state: 'active', applied: 0, error: { code: 'SQLITE_IOERR' } },
    { name: 'b', state: 'active', applied: 0 },
  ];
  reports.add(failed);
  expect(sent.at(-1)).toEqual(failed);
  reports.add(active(1, 80));
  expect(sent.at(-1)).toEqual(active(1, 80)); // the pass after an error: at once (the part is ok again)
  reports.add(active(2, 90));
  reports.flush(); // the worker stops: nothing held is lost
  expect(sent.at(-1)).toEqual(active(2, 90));
});
