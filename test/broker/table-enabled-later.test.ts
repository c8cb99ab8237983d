// a table the source captures after publishing began reaches the stream: a snapshot that holds it, after the batches of the others
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, dumpTables, write, onDatabase } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from './support/broker.ts';
import { enable } from '../../src/capture/index.ts';
import { Publisher, subscribe } from '../../src/broker/index.ts';

/*
 * Review round 4. A publisher's position covers the tables its source
 * captured when it was taken, and its batches carry those alone: a table
 * enabled after publishing began never reached the stream (publish exited
 * 0, every subscriber lacked it). Now a pass that finds such a table first
 * publishes the batches of the tables its position covers, so their
 * subscribers go on from their cursors, then a snapshot that holds every
 * captured table (STREAM_TABLES_ADDED), whose position the next batches
 * continue. A subscriber that starts from the stream gets the new table.
 */

const nats = natsForFile();

describe('a table enabled after publishing began', () => {
  test('is published in a snapshot after the batches of the others, and a new subscriber mirrors it', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = trackerSource(path.join(dir, 'app.db'), ['issues']);
      const sourceId = sourceIdOf(src);
      const old = path.join(dir, 'old.db');
      const once = async () => {
        const p = await Publisher.open(src, url);
        try {
          return await p.runOnce();
        } finally {
          await p.close();
        }
      };
      await once();
      await subscribe(old, url, { sourceId });

      onDatabase(src, (db) => enable(db, ['labels']));
      write(src, "UPDATE issues SET title = 'one' WHERE repo_id = 1 AND number = 1");
      write(src, "UPDATE labels SET name = 'renamed' WHERE rowid = 1");
      const pass = await once();
      expect({ batches: pass.batches, snapshots: pass.snapshots.map((s) => s.reason) }).toEqual({
        batches: 1,
        snapshots: ['STREAM_TABLES_ADDED'],
      });

      // The subscriber of issues goes on from its cursor: one batch, no rebuild.
      const going = await subscribe(old, url, { sourceId });
      expect({ batches: going.batchesApplied, rebuilt: going.rebuilt }).toEqual({ batches: 1, rebuilt: undefined });
      expect(dumpTables(old, ['issues'])).toEqual(dumpTables(src, ['issues']));

      // A subscriber that starts now gets both tables, and the changes after.
      const fresh = path.join(dir, 'fresh.db');
      await subscribe(fresh, url, { sourceId });
      write(src, "UPDATE labels SET name = 'again' WHERE rowid = 2");
      await once();
      const after = await subscribe(fresh, url, { sourceId });
      expect(after.projections.map((p) => [p.name, p.state])).toEqual([
        ['issues', 'active'],
        ['labels', 'active'],
      ]);
      expect(dumpTables(fresh, ['issues', 'labels'])).toEqual(dumpTables(src, ['issues', 'labels']));
    } finally {
      removeDir(dir);
    }
  });
});
