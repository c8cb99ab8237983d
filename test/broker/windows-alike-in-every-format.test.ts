// a publisher of two formats sends each window with the same seqs in both, while the source is written under it
import path from 'node:path';
import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, startCli, waitFor, type Spawned } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName, subjectsOf } from '../../src/broker/index.ts';

/*
 * `publish --format jsonl,segment` builds each window once per format, each
 * from its own read of the journal. A commit between the two reads ended
 * the JSONL message at one seq and the segment message at a later one
 * (34-35 and 34-36); the next segment window then started inside the one
 * before it, and every segment subscriber stopped there (HISTORY_DIVERGED:
 * a batch spanning its seq), on every run. The formats after the first now
 * end where the first ended.
 */

const nats = natsForFile();

describe('a publisher of JSONL and segments while the source is written', () => {
  test('each window covers the same seqs in both formats, and a segment subscriber applies them all', async () => {
    const dir = makeDir();
    let publisher: Spawned | undefined;
    try {
      const url = nats.server().url;
      const src = path.join(dir, 'src.db');
      runSqliteCli(src, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);');
      expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
      const p = startCli(['publish', src, '--nats', url, '--format', 'jsonl,segment', '--batch', '20', '--follow']);
      publisher = p;
      await waitFor('the publisher following', () => /following|published/.test(p.stdout() + p.stderr()), 20_000);
      // Single-row commits, about one every 2 ms: many land between two reads of one window.
      runPython(
        `import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
for i in range(1, 1201):
    c.execute("INSERT INTO t VALUES (?, ?)", (i, "v%d" % i))
    time.sleep(0.002)`,
        [src],
      );
      const sid = sourceIdOf(src);
      const stream = defaultStreamName(sid);
      const windows = async (format: 'jsonl' | 'segment') =>
        (await streamMessages(url, stream))
          .filter((m) => m.subject === subjectsOf(sid, format).batch)
          .map((m) => `${m.header.get('Sluice-From-Seq')}-${m.header.get('Sluice-To-Seq')}`);
      const until = Date.now() + 30_000;
      for (;;) {
        const [j, s] = [await windows('jsonl'), await windows('segment')];
        if (j.at(-1)?.endsWith('-1200') === true && s.at(-1)?.endsWith('-1200') === true) break;
        if (Date.now() > until) throw new Error(`not published to seq 1200: ${j.at(-1)} ${s.at(-1)}; ${p.stderr()}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const [jsonl, segment] = [await windows('jsonl'), await windows('segment')];
      expect(jsonl.length).toBeGreaterThan(10);
      expect(segment).toEqual(jsonl);
      const tgt = path.join(dir, 'seg.db');
      const r = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sid, '--format', 'segment']);
      expect(r.status, r.stderr).toBe(0);
    } finally {
      publisher?.child.kill('SIGKILL');
      removeDir(dir);
    }
  }, 90_000);
});
