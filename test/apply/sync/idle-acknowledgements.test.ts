// followers of one idle source stop writing to it instead of waking each other with acknowledgements
import path from 'node:path';
import { test, expect, runPython } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { followSyncer } from '../../../src/pipeline/follow/index.ts';

/*
 * Each follower acknowledges its position in the source (a write to
 * _sluice_consumers), and another follower of the same source sees that
 * write as a commit and runs a pass. When that pass acknowledged the same
 * position again, two followers (two targets of `sluice run`, or two
 * `sync --follow`) woke each other about once a second forever: an idle
 * source written to, the write lock taken beside the app, and every
 * follower's CPU spent on empty passes. A pass that moved nothing has
 * nothing to acknowledge.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('two followers of one idle source stop writing to it once each acknowledged where it is', async ({ tmp, makeDb }) => {
  const { db, file: src } = makeDb('app.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
  enable(db, ['t']);
  db.close();
  const targets = ['a.db', 'b.db'].map((f) => path.join(tmp, f));
  const stop = new AbortController();
  const syncers = await Promise.all(targets.map((t) => Syncer.open(src, t)));
  const loops = syncers.map((s) => followSyncer(s, { signal: stop.signal, onReport: () => undefined }));
  try {
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
for i in range(1, 6): con.execute("INSERT INTO t (id, v) VALUES (?, ?)", (i, "row %d" % i))`,
      [src],
    );
    const count = (t: string) => {
      const d = openDatabase(t, { readonly: true, role: 'target' });
      try {
        return Number(d.prepare('SELECT count(*) FROM t').pluck().get());
      } catch {
        return 0;
      } finally {
        d.close();
      }
    };
    const deadline = Date.now() + 20_000;
    while (targets.some((t) => count(t) < 5) && Date.now() < deadline) await sleep(50);
    expect(targets.map(count)).toEqual([5, 5]);
    // Both acknowledge the last pass about a second (ACK_INTERVAL_MS) after it, later when the other holds the
    // source's lock then; once both are at the journal's last seq, nothing is left to write.
    const watcher = openDatabase(src, { readonly: true });
    try {
      const version = () => Number(watcher.pragma('data_version', { simple: true }));
      const acks = () => watcher.prepare('SELECT name, seq FROM _sluice_consumers ORDER BY name').all() as { seq: number }[];
      const last = Number(watcher.prepare('SELECT max(seq) FROM _sluice_journal').pluck().get());
      const until = Date.now() + 20_000;
      while (!(acks().length === 2 && acks().every((a) => Number(a.seq) === last)) && Date.now() < until) await sleep(100);
      await sleep(500); // the commit of the last acknowledgement seen by the other follower: its pass moves nothing
      const before = { version: version(), acks: acks() };
      expect(before.acks).toHaveLength(2);
      await sleep(3000);
      // No commit to the source in 3 s: data_version (another connection's commits) did not move.
      expect({ version: version(), acks: acks() }).toEqual(before);
    } finally {
      watcher.close();
    }
  } finally {
    stop.abort();
    await Promise.all(loops);
    for (const s of syncers) s.close();
  }
}, 60_000);
