// a subscriber that mirrors every table ("*") mirrors a table the source enables after it started, following or started again
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import {
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  write,
  onDatabase,
  runCliAsync,
  projectionSeq,
  sourceSeq,
  waitFor,
} from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';
import { enable } from '../../src/capture/index.ts';
import { subscribe } from '../../src/broker/index.ts';

/*
 * Review round 2, broker bug 4. A table the source captures after
 * publishing began reaches the stream in a snapshot (STREAM_TABLES_ADDED),
 * and a subscriber that started from the stream since mirrored it; one
 * already following, or started again on its target, went on with the
 * tables it had, although it mirrors every table ("*": subscribe without
 * --projection, --projection '*', sluice.yml projections ["*"]), where
 * `sync` makes the mirror of a table enabled since. Now such a subscriber
 * builds the mirror from that snapshot (met while it follows, or the last
 * one when it starts past it), and its target's projection set stores
 * "*". One given its definitions alone does not.
 */

const nats = natsForFile();

describe('a subscriber of every table ("*")', () => {
  test('following, or started again, mirrors a table enabled since; one of given definitions does not', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = trackerSource(path.join(dir, 'app.db'), ['issues']);
      const sourceId = sourceIdOf(src);
      await publishOnce(src, url);
      const following = path.join(dir, 'following.db');
      const later = path.join(dir, 'later.db');
      const given = path.join(dir, 'given.db');
      const star = path.join(dir, 'star.db');
      await subscribe(following, url, { sourceId });
      await subscribe(later, url, { sourceId });
      await subscribe(given, url, { sourceId, projections: [{ name: 'issues', source: 'issues', kind: 'mirror' }] });
      const issuesDef = path.join(dir, 'issues.json');
      fs.writeFileSync(issuesDef, JSON.stringify({ name: 'issues', source: 'issues', kind: 'mirror' }));
      const cli = await runCliAsync([
        'subscribe',
        star,
        '--nats',
        url,
        '--source',
        sourceId,
        '--projection',
        issuesDef,
        '--projection',
        '*',
      ]);
      expect(cli.status, cli.stderr).toBe(0);

      const stop = new AbortController();
      const run = subscribe(following, url, { sourceId, follow: true, signal: stop.signal });
      try {
        onDatabase(src, (db) => enable(db, ['labels']));
        write(src, "UPDATE issues SET title = 'one' WHERE repo_id = 1 AND number = 1");
        write(src, "UPDATE labels SET name = 'renamed' WHERE rowid = 1");
        await publishOnce(src, url);
        write(src, "UPDATE labels SET name = 'again' WHERE rowid = 2");
        await publishOnce(src, url);
        await waitFor(
          'the follower to mirror labels',
          () => fs.existsSync(following) && projectionSeq(following, 'labels') === sourceSeq(src),
          60_000,
        );
      } finally {
        stop.abort();
        await run;
      }
      expect(dumpTables(following, ['issues', 'labels'])).toEqual(dumpTables(src, ['issues', 'labels']));

      const again = await subscribe(later, url, { sourceId });
      expect(again.projections.map((p) => [p.name, p.state])).toEqual([
        ['issues', 'active'],
        ['labels', 'active'],
      ]);
      expect(dumpTables(later, ['issues', 'labels'])).toEqual(dumpTables(src, ['issues', 'labels']));

      const starred = await runCliAsync([
        'subscribe',
        star,
        '--nats',
        url,
        '--source',
        sourceId,
        '--projection',
        issuesDef,
        '--projection',
        '*',
      ]);
      expect(starred.status, starred.stderr).toBe(0);
      expect(dumpTables(star, ['issues', 'labels'])).toEqual(dumpTables(src, ['issues', 'labels']));

      const mine = await subscribe(given, url, { sourceId, projections: [{ name: 'issues', source: 'issues', kind: 'mirror' }] });
      expect(mine.projections.map((p) => p.name)).toEqual(['issues']);
      expect(dumpTables(given)).toEqual(dumpTables(src, ['issues']));
    } finally {
      removeDir(dir);
    }
  }, 120_000);
});
