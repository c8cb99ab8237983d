// progress figures give the share of the range the rate and the lag
import { test, expect } from 'vitest';
import fc from 'fast-check';
import { progressFigures } from '../../src/cli/index.ts';

test('the share is the part of the range from the start seq to the source seq that was applied', () => {
  expect(progressFigures({ startSeq: 100, seq: 150, sourceSeq: 300, events: 50 }, 1000).share).toBe(0.25);
  expect(progressFigures({ startSeq: 0, seq: 10, sourceSeq: 1000, events: 10 }, 1000).share).toBe(0.01);
});

test('a run with nothing to apply is complete, and the share never leaves 0..1', () => {
  expect(progressFigures({ startSeq: 40, seq: 40, sourceSeq: 40, events: 0 }, 0).share).toBe(1);
  fc.assert(
    fc.property(fc.nat(1e6), fc.nat(1e6), fc.nat(1e6), (a, b, c) => {
      const [start, seq, source] = [a, b, c].sort((x, y) => x - y) as [number, number, number];
      const f = progressFigures({ startSeq: start, seq, sourceSeq: source, events: seq - start }, 500);
      expect(f.share).toBeGreaterThanOrEqual(0);
      expect(f.share).toBeLessThanOrEqual(1);
      expect(f.lag).toBe(source - seq);
    }),
  );
});

test('the rate is events per second of elapsed time, and 0 before any time passed', () => {
  expect(progressFigures({ startSeq: 0, seq: 500, sourceSeq: 900, events: 500 }, 2000).rate).toBe(250);
  expect(progressFigures({ startSeq: 0, seq: 500, sourceSeq: 900, events: 500 }, 0).rate).toBe(0);
});

test('the lag is what the projection still has to apply, and an old progress without a start seq counts from 0', () => {
  const f = progressFigures({ seq: 30, sourceSeq: 120, events: 30 }, 1000);
  expect(f.lag).toBe(90);
  expect(f.share).toBe(0.25);
});
