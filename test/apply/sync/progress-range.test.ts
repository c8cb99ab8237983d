// sync progress names the range of the run from the stored seq to the sources
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { Syncer, type SyncProgress } from '../../../src/apply/sync/index.ts';
import { highWater, makeSource } from '../support/target.ts';
import { SCHEMA, SEED, scenarioProjections, writeRound } from '../support/scenario.ts';

test("each progress event of a catch-up gives the projection's seq at the start of the run and the source's seq, so the share done grows from below 1", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
  const events: SyncProgress[] = [];
  const s = await Syncer.open(src.file, path.join(tmp, 'target.db'), {
    projections: scenarioProjections().filter((p) => p.name === 'items'),
    batchSize: 1,
    onProgress: (p) => events.push(p),
  });
  try {
    await s.runOnce();
    writeRound(src.db, 0);
    await s.runOnce();
    const start = highWater(src.db);
    expect(start).toBeGreaterThan(0);
    for (let i = 1; i < 4; i++) writeRound(src.db, i);
    const end = highWater(src.db);
    expect(end - start).toBeGreaterThan(3);
    events.length = 0;
    await s.runOnce();
    const catchUp = events.filter((e) => e.phase === 'catch-up');
    expect(catchUp.length).toBeGreaterThan(2);
    for (const e of events) {
      expect([e.startSeq, e.sourceSeq]).toEqual([start, end]);
      expect(e.elapsedMs).toBeGreaterThanOrEqual(0);
    }
    expect(catchUp[0]?.seq).toBeLessThan(end);
    expect(events.at(-1)).toMatchObject({ phase: 'current', seq: end });
  } finally {
    s.close();
  }
});
