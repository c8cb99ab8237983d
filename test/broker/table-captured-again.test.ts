// a subscribed projection suspended with TABLE_UNTRACKED: health gives subscribe's repair, and subscribe rebuilds it once the table is captured again
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, dumpTables, write, onDatabase } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';
import { disable, enable } from '../../src/capture/index.ts';
import { subscribe } from '../../src/broker/index.ts';

/*
 * Review round 2, broker bug 2. health of a subscribed target whose
 * projection subscribe suspended with TABLE_UNTRACKED gave sync's repair:
 * "capture it again (sluice enable SOURCE labels) and run sluice sync
 * again". Once the table was captured again, the publisher published a
 * snapshot that holds it (STREAM_TABLES_ADDED), but a subscriber following
 * batches skipped it: the projection stayed suspended, and a sync (the
 * advice) cleared it only until the next subscribe. Now subscribe rebuilds
 * such a projection from a snapshot of the stream that holds its table
 * (met while it follows, or the last one when it starts past it), and
 * health gives subscribe's repair: capture the table on the source, and
 * subscribe rebuilds the projection from the snapshot its publisher then
 * publishes.
 */

const nats = natsForFile();

describe('a subscribed projection of a table whose capture was taken off', () => {
  test('health gives the subscribe repair; once the table is captured again, subscribe rebuilds it', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = trackerSource(path.join(dir, 'app.db'), ['issues', 'labels']);
      const tgt = path.join(dir, 'tgt.db');
      const sourceId = sourceIdOf(src);
      await publishOnce(src, url);
      await subscribe(tgt, url, { sourceId });

      onDatabase(src, (db) => disable(db, ['labels']));
      write(src, "UPDATE issues SET title = 'one' WHERE repo_id = 1 AND number = 1");
      await publishOnce(src, url);
      const suspended = await subscribe(tgt, url, { sourceId });
      expect(suspended.projections.map((p) => [p.name, p.state, p.reason])).toEqual([
        ['issues', 'active', undefined],
        ['labels', 'suspended', 'TABLE_UNTRACKED'],
      ]);
      const health = await runCliAsync(['health', tgt]);
      expect(health.status, health.stdout).toBe(3);
      expect(health.stdout).not.toContain('sluice sync');
      expect(health.stdout).toContain('sluice enable SOURCE labels');
      expect(health.stdout).toMatch(/sluice subscribe rebuilds labels from it/);
      expect(health.stdout).toContain(`SOURCE: the database of source ${sourceId}`);

      // Captured again, one write each: the publisher publishes the batch of issues, then a snapshot that holds labels.
      onDatabase(src, (db) => enable(db, ['labels']));
      write(src, "UPDATE issues SET title = 'two' WHERE repo_id = 1 AND number = 2");
      write(src, "UPDATE labels SET name = 'renamed' WHERE rowid = 1");
      await publishOnce(src, url);
      const again = await subscribe(tgt, url, { sourceId });
      expect(again.projections.map((p) => [p.name, p.state, p.reason])).toEqual([
        ['issues', 'active', undefined],
        ['labels', 'active', undefined],
      ]);
      expect(dumpTables(tgt, ['issues', 'labels'])).toEqual(dumpTables(src, ['issues', 'labels']));

      write(src, "UPDATE labels SET name = 'again' WHERE rowid = 2");
      await publishOnce(src, url);
      const next = await subscribe(tgt, url, { sourceId });
      expect({ batches: next.batchesApplied, started: next.started }).toEqual({ batches: 1, started: 'batch' });
      expect(dumpTables(tgt, ['issues', 'labels'])).toEqual(dumpTables(src, ['issues', 'labels']));
      const ok = await runCliAsync(['health', tgt]);
      expect(ok.status, ok.stdout).toBe(0);
    } finally {
      removeDir(dir);
    }
  });

  test('a subscriber started past the snapshot that holds the table again rebuilds the projection from it', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = trackerSource(path.join(dir, 'app.db'), ['issues', 'labels']);
      const tgt = path.join(dir, 'tgt.db');
      const sourceId = sourceIdOf(src);
      await publishOnce(src, url);
      await subscribe(tgt, url, { sourceId });
      onDatabase(src, (db) => disable(db, ['labels']));
      write(src, "UPDATE issues SET title = 'one' WHERE repo_id = 1 AND number = 1");
      await publishOnce(src, url);
      await subscribe(tgt, url, { sourceId });
      onDatabase(src, (db) => enable(db, ['labels']));
      write(src, "UPDATE labels SET name = 'renamed' WHERE rowid = 1");
      await publishOnce(src, url);
      write(src, "UPDATE issues SET title = 'two' WHERE repo_id = 1 AND number = 2");
      await publishOnce(src, url);
      // A run of issues alone goes past the snapshot that holds labels again (as a subscriber before this change did).
      const alone = await subscribe(tgt, url, { sourceId, projections: [{ name: 'issues', source: 'issues', kind: 'mirror' }] });
      expect(alone.projections.map((p) => [p.name, p.state])).toEqual([['issues', 'active']]);
      const r = await subscribe(tgt, url, { sourceId });
      expect({ started: r.started, projections: r.projections.map((p) => [p.name, p.state]) }).toEqual({
        started: 'snapshot',
        projections: [
          ['issues', 'active'],
          ['labels', 'active'],
        ],
      });
      expect(dumpTables(tgt, ['issues', 'labels'])).toEqual(dumpTables(src, ['issues', 'labels']));
    } finally {
      removeDir(dir);
    }
  });
});
