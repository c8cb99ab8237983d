// sync on a terminal shows the share applied with events per second and lag
import { beforeAll, afterAll } from 'vitest';
import { test, expect } from '../support/fixtures.ts';
import { makeDir, removeDir, sourceSeq, scalar, syncedTrackerWithBacklog } from './support/cli.ts';
import { onTerminal, plain } from './support/pty.ts';

/*
 * The progress bar of a long catch-up, as a user sees it on a terminal:
 * the share of the run's range applied grows from below 100%, beside the
 * events per second and the lag.
 */

let dir: string;
let src: string;
let tgt: string;

beforeAll(async () => {
  dir = makeDir();
  ({ src, tgt } = await syncedTrackerWithBacklog(dir, 40));
});
afterAll(() => removeDir(dir));

test.skipIf(process.platform === 'win32')(
  'a long catch-up shows a share below 100% that grows, with events/s and lag, and ends at the source',
  async () => {
    const run = onTerminal(['sync', src, tgt, '--batch', '1']);
    expect(await run.exited, run.output()).toBe(0);
    const lines = plain(run.output())
      .split('\n')
      .filter((l) => l.startsWith('comments ['));
    const shares = lines.map((l) => Number(/\] (\d+)% /.exec(l)?.[1]));
    expect(shares.length, run.output()).toBeGreaterThan(2);
    expect(shares[0]).toBeLessThan(100);
    expect(shares.some((s) => s > 0 && s < 100)).toBe(true);
    for (let i = 1; i < shares.length; i++) expect(shares[i]).toBeGreaterThanOrEqual(shares[i - 1] as number);
    expect(
      lines.some((l) => /\| \d+ ev\/s \| lag [1-9]\d*$/.test(l.trimEnd())),
      lines.join('\n'),
    ).toBe(true);
    expect(Number(scalar(tgt, "SELECT seq FROM main._sluice_projections WHERE name = 'comments'"))).toBe(sourceSeq(src));
  },
);
