// each suspension names the command that repairs it
import { spawnSync } from 'node:child_process';
import { test, expect } from '../../support/fixtures.ts';
import { repairAction, shellWord } from '../../../src/sqlite/index.ts';

test('each suspension reason gets the command that repairs it', () => {
  expect(repairAction('issues', 'TARGET_DIVERGED', '/data/app.db', '/data/cache.db')).toBe(
    'TARGET_DIVERGED: find the cause (sluice health /data/cache.db --json shows what was found), then rebuild it: sluice reinit /data/app.db /data/cache.db issues',
  );
  for (const reason of ['TABLE_UNARMED', 'NEEDS_IMAGES_MODE']) {
    expect(repairAction('issues_search', reason, 'app.db', 'cache.db', 'issues'), reason).toBe(
      `${reason}: fix the source: capture issues in images mode (sluice enable app.db issues --mode images), then run sluice sync again`,
    );
  }
  // A table no longer captured may have been taken out on purpose (sluice disable SRC TABLE): capture it again, or drop the projection.
  expect(repairAction('issues_search', 'TABLE_UNTRACKED', 'app.db', 'cache.db', 'issues')).toBe(
    'TABLE_UNTRACKED: the source does not capture issues: capture it again (sluice enable app.db issues --mode images) and run sluice sync again, or remove the projection and its tables: sluice drop cache.db issues_search',
  );
  expect(repairAction('issues', 'TARGET_CONSTRAINT')).toMatch(
    /^TARGET_CONSTRAINT: .*drop it or make it non-unique, then run sluice sync again$/,
  );
  // What is not known where the repair is made is named in capitals and said in words, never a <placeholder>.
  expect(repairAction('issues', null)).toBe(
    'suspended: find the cause (sluice health TARGET --json shows what was found), then rebuild it: sluice reinit SOURCE TARGET issues (TARGET: the database that holds issues; SOURCE: the database the target is synced from)',
  );
  expect(repairAction('issues', 'TARGET_DIVERGED', undefined, 'cache.db')).toMatch(
    /sluice reinit SOURCE cache\.db issues \(SOURCE: the database cache\.db is synced from\)$/,
  );
});

const AWKWARD = [
  '/my data/app.db',
  '/data/$HOME/app.db',
  '/data/a`id`b.db',
  '/data/x>y.db',
  "/it's/app.db",
  '/data/back\\slash.db',
  '/data/new\nline.db',
  'plain/path-1.db',
];

test.skipIf(process.platform === 'win32')(
  'paths in a repair command reach a POSIX shell as they are: nothing expanded, run or redirected',
  () => {
    for (const p of AWKWARD) {
      const r = spawnSync('sh', ['-c', `printf %s ${shellWord(p, 'linux')}`], { encoding: 'utf8' });
      expect(r.stdout, p).toBe(p);
    }
    expect(shellWord('plain/path-1.db', 'linux')).toBe('plain/path-1.db');
  },
);

test('on Windows, paths are double-quoted when they need it, backslashes kept as typed', () => {
  expect(shellWord('C:\\data\\app.db', 'win32')).toBe('C:\\data\\app.db');
  expect(shellWord('C:\\Program Files\\app.db', 'win32')).toBe('"C:\\Program Files\\app.db"');
  expect(shellWord('\\\\server\\share\\my db.db', 'win32')).toBe('"\\\\server\\share\\my db.db"');
});
