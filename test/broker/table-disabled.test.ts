// a subscribed projection of a table whose capture was taken off is suspended with TABLE_UNTRACKED, as sync does
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, dumpTables, write, onDatabase, scalar } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';
import { disable } from '../../src/capture/index.ts';
import { subscribe } from '../../src/broker/index.ts';

/*
 * `sluice disable SRC labels` takes capture off one table: its publisher
 * publishes a new snapshot without it, and its batches carry no event of
 * it. A subscriber rebuilt the other tables from that snapshot and left
 * labels' projection where it was, active: every subscribe after stopped
 * with BATCH_GAP on it, and health said it was ok. It is now suspended
 * with TABLE_UNTRACKED (health exit 3) while the other projections go on,
 * as sync suspends a projection of a table its source does not capture.
 */

const nats = natsForFile();

describe('a subscriber of a source that took capture off one table', () => {
  test('suspends that table with TABLE_UNTRACKED and goes on applying the others', async () => {
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
      const rebuilt = await subscribe(tgt, url, { sourceId });
      expect(rebuilt.projections.map((p) => [p.name, p.state, p.reason])).toEqual([
        ['issues', 'active', undefined],
        ['labels', 'suspended', 'TABLE_UNTRACKED'],
      ]);

      write(src, "UPDATE issues SET title = 'two' WHERE repo_id = 1 AND number = 2");
      await publishOnce(src, url);
      const next = await subscribe(tgt, url, { sourceId });
      expect(next.batchesApplied).toBe(1);
      expect(next.projections.map((p) => [p.name, p.state, p.reason])).toEqual([
        ['issues', 'active', undefined],
        ['labels', 'suspended', 'TABLE_UNTRACKED'],
      ]);
      expect(dumpTables(tgt, ['issues'])).toEqual(dumpTables(src, ['issues']));
      expect(scalar(tgt, "SELECT seq FROM _sluice_projections WHERE name = 'issues'")).toBe(
        scalar(src, 'SELECT MAX(seq) FROM _sluice_journal'),
      );

      const cli = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sourceId]);
      expect(cli.status, cli.stderr).toBe(3);
      expect(cli.stderr + cli.stdout).not.toContain('BATCH_GAP');
      const health = await runCliAsync(['health', tgt]);
      expect(health.status, health.stdout).toBe(3);
      expect(health.stdout).toMatch(/labels \[mirror\] suspended TABLE_UNTRACKED/);
      expect(health.stdout).toMatch(/ok issues \[mirror\] active/);
    } finally {
      removeDir(dir);
    }
  });
});
