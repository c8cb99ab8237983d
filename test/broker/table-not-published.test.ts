// a subscriber's projection of a table the stream does not carry is refused naming the stream and the source's capture, not import's file
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, scalar } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf, defaultStreamName } from './support/broker.ts';

/*
 * Review round 2, broker bug 4. `sluice subscribe TGT --projection F`, F a
 * projection of a table the source does not capture (never enabled, or
 * disabled), failed with import's IMPORT_NO_SHAPE: "the file has no
 * snapshot of table labels ... Export without --since first, then import
 * that file": there is no file and no export. It is now
 * BROKER_TABLE_NOT_PUBLISHED naming the projection, the table, the stream
 * and what its snapshot holds, and the fix: capture the table on the
 * source (a running publisher then publishes a snapshot that holds it).
 */

const nats = natsForFile();

describe('subscribe --projection of a table the stream does not carry', () => {
  test('is BROKER_TABLE_NOT_PUBLISHED naming the stream and the capture, and builds nothing', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = trackerSource(path.join(dir, 'app.db'), ['issues']);
      const sourceId = sourceIdOf(src);
      await publishOnce(src, url);
      const def = path.join(dir, 'labels.json');
      fs.writeFileSync(def, JSON.stringify({ name: 'labels', source: 'labels', kind: 'mirror' }));
      const tgt = path.join(dir, 'tgt.db');
      const r = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sourceId, '--projection', def]);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).not.toMatch(/export|the file|import/i);
      expect(r.stderr).toContain('BROKER_TABLE_NOT_PUBLISHED');
      expect(r.stderr).toContain(`stream ${defaultStreamName(sourceId)}`);
      expect(r.stderr).toMatch(/snapshot at seq \d+ holds only issues/);
      expect(r.stderr).toContain('sluice enable SOURCE labels');
      expect(r.stderr).toContain('STREAM_TABLES_ADDED');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(fs.existsSync(tgt) ? scalar(tgt, "SELECT count(*) FROM sqlite_schema WHERE name = 'labels'") : 0n).toBe(0n);
    } finally {
      removeDir(dir);
    }
  });
});
