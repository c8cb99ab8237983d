// a supervised part of sluice run waits what it logs after a failure: the backoff starts again after each recovery
import { test, expect, describe } from '../../support/fixtures.ts';
import { SupervisedPart, PartFailure, type PartKind, type RunShared } from '../../../src/pipeline/run/index.ts';

/*
 * One p-retry loop ran for the part's whole life, and p-retry counted
 * every failure of it: after a few failures that each recovered, the wait
 * it made grew to 30 s while the part logged (and /healthz showed) the
 * 500 ms of its count since it last ran. A part that fails, recovers and
 * fails again must wait what it says.
 */

describe('SupervisedPart', () => {
  test('after failures that each recovered, a new failure waits the first backoff, as it logs', async () => {
    const runs: number[] = [];
    const waits: number[] = [];
    let n = 0;
    // Each attempt runs (ok), then fails: 5 failures in all, each after a recovery; then it runs until stopped.
    const kind: PartKind<null> = {
      kind: 'target',
      configs: () => [null],
      name: () => 'fake',
      fingerprint: () => 'fake',
      async run(_c, ctx) {
        runs.push(Date.now());
        ctx.ok();
        if (++n <= 5) throw new PartFailure('FAKE', `failure ${n}`);
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      },
    };
    const part = new SupervisedPart(kind, null, (level, event, msg, extra) => {
      if (event === 'retry') waits.push(Number((extra as { retryMs: number }).retryMs));
    });
    part.start({} as RunShared);
    const deadline = Date.now() + 15_000;
    while (runs.length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await part.stop();
    expect(runs).toHaveLength(6);
    expect(waits).toEqual([500, 500, 500, 500, 500]);
    const gaps = runs.slice(1).map((t, i) => t - (runs[i] as number));
    // What it waited is what it logged (before: 500, 1000, 2000, 4000, 8000 ms).
    expect(Math.max(...gaps)).toBeLessThan(3_000);
  }, 30_000);
});
