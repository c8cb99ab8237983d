// a source published to one stream, then to another name: refused with the stream that holds its subjects and both fixes
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, runCliAsync } from '../cli/support/cli.ts';
import { defaultStreamName, natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';

/*
 * JetStream lets one stream only take a subject. A source published once
 * (to its default stream, SLUICE_<id>) and then with --stream OTHER cannot
 * have OTHER made for its subjects. Before, publish exited 1 with
 * "INTERNAL: subjects overlap with an existing stream"; now it says
 * BROKER_SUBJECTS_TAKEN, which stream holds them and both ways on, and makes
 * nothing.
 */

const nats = natsForFile();

describe('publish --stream to a name other than the stream holding the source', () => {
  test('is refused with BROKER_SUBJECTS_TAKEN, naming the stream that holds the subjects; nothing is made', async () => {
    const dir = makeDir();
    try {
      const src = trackerSource(path.join(dir, 'app.db'));
      const url = nats.server().url;
      const first = await runCliAsync(['publish', src, '--nats', url, '--json']);
      expect(first.status, first.stderr).toBe(0);
      const holder = defaultStreamName(sourceIdOf(src));
      const r = await runCliAsync(['publish', src, '--nats', url, '--stream', 'OTHER', '--json']);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/BROKER_SUBJECTS_TAKEN/);
      expect(r.stderr).not.toMatch(/INTERNAL/);
      expect(r.stderr).toContain(`stream ${holder} takes them already`);
      expect(r.stderr).toContain(`--stream ${holder}`);
      await expect(streamMessages(url, 'OTHER')).rejects.toThrow(/stream not found/i);
      // The stream that holds them goes on as before.
      const again = await runCliAsync(['publish', src, '--nats', url, '--stream', holder, '--json']);
      expect(again.status, again.stderr).toBe(0);
    } finally {
      removeDir(dir);
    }
  });
});
