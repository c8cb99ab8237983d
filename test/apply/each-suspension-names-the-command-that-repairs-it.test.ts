import { test, expect } from '../support/fixtures.ts';
import { repairAction } from '../../src/apply/target-meta.ts';

test('each suspension reason gets the command that repairs it, with paths quoted where a shell would split them', () => {
  expect(repairAction('issues', 'TARGET_DIVERGED', '/data/app.db', '/data/cache.db')).toBe(
    'TARGET_DIVERGED: find the cause (sluice verify /data/app.db /data/cache.db shows the differing keys), then rebuild it: sluice sync /data/app.db /data/cache.db --reinit issues',
  );
  expect(repairAction('my issues', 'UNCAPTURED_REPLACE', '/my data/app.db', 'cache.db')).toMatch(/sluice sync "\/my data\/app\.db" cache\.db --reinit "my issues"$/);
  for (const reason of ['TABLE_UNARMED', 'TABLE_UNTRACKED', 'NEEDS_IMAGES_MODE', 'COUNTER_MODE_TABLE']) {
    expect(repairAction('issues', reason, 'app.db'), reason).toBe(`${reason}: fix the source (sluice enable app.db <table>, in images mode), then run sluice sync again`);
  }
  expect(repairAction('issues', 'TARGET_CONSTRAINT')).toMatch(/^TARGET_CONSTRAINT: .*drop it or make it non-unique, then run sluice sync again$/);
  expect(repairAction('issues', null)).toMatch(/^suspended: .*--reinit issues$/);
});
