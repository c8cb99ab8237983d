// a subscribe with nothing new to read still exits 3 and lists a suspended projection
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, runCliAsync } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';

/*
 * A hand edit of a subscribed target suspends the projection at the next
 * batch (TARGET_DIVERGED, exit 3). A later subscribe that found nothing new
 * in the stream (the other projection, issues, current) reported "projections": [] and exited 0, as if all were
 * well: an import that reads no line reports no projection, and that empty
 * list stood for the target's state. It now reports the target's stored
 * projections, and exits 3 while one is suspended (docs/cli.md).
 */

const nats = natsForFile();

describe('subscribe with nothing new', () => {
  test('exits 3 and lists the suspended projection, as the subscribe that suspended it did', async () => {
    const dir = makeDir();
    const url = nats.server().url;
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments', 'issues']);
      const sid = sourceIdOf(src);
      const tgt = path.join(dir, 'cache.db');
      const subscribe = () => runCliAsync(['subscribe', tgt, '--nats', url, '--source', sid, '--json']);
      await publishOnce(src, url, { batchSeqs: 10 });
      expect((await subscribe()).status).toBe(0);
      runSqliteCli(tgt, 'UPDATE comments SET body = body || 1 WHERE id = 1');
      runSqliteCli(src, "UPDATE comments SET body = 'moved' WHERE id = 1");
      await publishOnce(src, url, { batchSeqs: 10 });
      const suspending = await subscribe();
      expect(suspending.status, suspending.stderr).toBe(3);
      // Nothing new in the stream since (the batch was read, and refused).
      for (let i = 0; i < 2; i++) {
        const idle = await subscribe();
        expect(idle.status, idle.stdout).toBe(3);
        const out = JSON.parse(idle.stdout) as { projections: { name: string; state: string }[] };
        expect(out.projections.map((p) => [p.name, p.state])).toEqual([
          ['comments', 'suspended'],
          ['issues', 'active'],
        ]);
      }
    } finally {
      removeDir(dir);
    }
  }, 60_000);
});
