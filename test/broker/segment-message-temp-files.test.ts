// a publisher of segments leaves nothing in the temp folder: each message's segment is removed once read, its folder on exit
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, parseJson, write } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf, streamMessages, defaultStreamName } from './support/broker.ts';
import { subjectsOf } from '../../src/broker/index.ts';

/*
 * A segment message is written as a small database in a private folder of
 * the publisher's temp folder, read whole and removed. The folder is made
 * once and kept for the next messages (a folder made and removed for each
 * one cost more than the segment), and removed when the process exits, so
 * nothing is left behind however many messages it published.
 */

const nats = natsForFile();

describe('publish --format segment and the temp folder', () => {
  test('several segment messages published, and nothing left in TMPDIR after publish exits', async () => {
    const dir = makeDir();
    try {
      const src = trackerSource(path.join(dir, 'app.db'));
      const tmp = path.join(dir, 'tmp');
      fs.mkdirSync(tmp);
      const url = nats.server().url;
      const env = { TMPDIR: tmp };
      expect((await runCliAsync(['publish', src, '--nats', url, '--format', 'segment', '--json'], { env })).status).toBe(0);
      for (let i = 0; i < 3; i++) write(src, `UPDATE issues SET score = score + 1 WHERE number <= ${i + 2}`);
      const r = await runCliAsync(['publish', src, '--nats', url, '--format', 'segment', '--batch', '2', '--json'], { env });
      expect(r.status, r.stderr).toBe(0);
      expect(parseJson(r, S.publishOutput).batches).toBeGreaterThan(2);
      const sid = sourceIdOf(src);
      const segments = (await streamMessages(url, defaultStreamName(sid))).filter((m) => m.subject === subjectsOf(sid, 'segment').batch);
      expect(segments.length).toBeGreaterThan(2);
      expect(fs.readdirSync(tmp)).toEqual([]);
    } finally {
      removeDir(dir);
    }
  });
});
