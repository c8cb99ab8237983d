// a follower stopped before it rebuilt a projection whose cursor cannot continue does not say "lag 0 ... where the next sync resumes"
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { Syncer } from '../../src/apply/sync/index.ts';
import { disable, enable } from '../../src/capture/index.ts';
import { FollowTally } from '../../src/cli/index.ts';
import { makeSource } from '../apply/support/target.ts';

/*
 * A table disabled, written while off and enabled again: its mirror's
 * cursor no longer continues (TABLE_REARMED), and the follower's first
 * pass rebuilds it, which for a large table takes a while. Stopped by a
 * signal before that rebuild committed, `sync --follow` said "lag 0
 * events; committed t at seq 0, where the next sync resumes", over a
 * mirror that lacks the rows written while the table was off (and the
 * next sync rebuilds it; it does not resume). Now its last line names the
 * projection as rebuilt from the source by the next sync, and says the lag
 * is not known (health's rule). Syncer.cursorBreaks reads which ones.
 */

describe('sync --follow stopped before a rebuild', () => {
  test('Syncer.cursorBreaks names a projection whose cursor cannot continue, and the final line says so instead of lag 0', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE u (id INTEGER PRIMARY KEY)', ['t', 'u'], {
      seed: "INSERT INTO t VALUES (1, 'a'), (2, 'b'); INSERT INTO u VALUES (1)",
    });
    const target = path.join(tmp, 'cache.db');
    const syncer = await Syncer.open(src.file, target);
    try {
      await syncer.runOnce();
      expect(syncer.cursorBreaks()).toEqual(new Map());
      const tally = new FollowTally();
      expect(tally.final('SIGTERM', syncer.standing(), syncer.cursorBreaks())).toMatch(
        /lag 0 events; committed t at seq \d+, u at seq \d+, where the next sync resumes$/,
      );

      disable(src.db, ['t']);
      src.db.exec("UPDATE t SET v = 'written while off' WHERE id = 1");
      enable(src.db, ['t']);
      // The follower stops here, before a pass rebuilt t.
      const breaks = syncer.cursorBreaks();
      expect(breaks).toEqual(new Map([['t', 'TABLE_REARMED']]));
      const line = tally.final('SIGTERM', syncer.standing(), breaks);
      expect(line).toContain('lag not known');
      expect(line).not.toMatch(/lag 0 events/);
      expect(line).toContain('t rebuilt from the source by the next sync');
      expect(line).toContain('TABLE_REARMED');
      expect(line).toMatch(/committed u at seq \d+, where the next sync resumes/);
      expect(line).not.toMatch(/committed t at/);
    } finally {
      syncer.close();
    }
  });
});
