// sluice run killed at any phase boundary converges on restart without applying an event twice
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { afterEach } from 'vitest';
import { test, expect, describe, PYTHON } from '../../support/fixtures.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { sourceSeq, type Spawned } from '../../cli/support/cli.ts';
import { journalSeqs } from '../../apply/support/target.ts';
import { appSource, freePort, kill, put, startRun, waitHealth } from '../support/run.ts';

/*
 * Issue 21, must hold: "a crash at every phase boundary converges on
 * restart". A `sluice run` process SIGKILLs itself (SLUICE_CRASH_AT, from a
 * target's worker thread, which takes the whole process) at each boundary
 * while a Python application keeps committing: before a batch commits
 * (here, during the first build), right after one commits, after a pass
 * but before its acknowledgement, and after a step of a protected rebuild
 * (a map whose definition file changed, over more rows than one step
 * copies). Each time `run` started again without the crash point
 * converges: every projection exact as verify checks it, and the custom
 * projection, which records every event it is given in the target's
 * transaction, was given each comments event once, in order.
 */

let running: Spawned | undefined;
let writer: ReturnType<typeof spawn> | undefined;
afterEach(() => {
  kill(running);
  writer?.kill('SIGKILL');
});

/** Rows copied per step of a protected rebuild in every run of this test: the map's 600 issues take three steps. */
const CHUNK = '200';

const RECORDER = `export default {
  version: '1',
  async init(_rows, { db }) {
    await db.schema.dropTable('applications').ifExists().execute();
    await db.schema.createTable('applications').addColumn('seq', 'integer', (c) => c.notNull()).addColumn('op', 'text', (c) => c.notNull()).execute();
  },
  async apply(event, { db }) {
    await db.insertInto('applications').values({ seq: event.seq, op: event.op }).execute();
  },
};
`;

const mapDef = (tag: string) => ({
  name: 'open_issues',
  source: 'issues',
  kind: 'map',
  columns: { id: 'id', title: 'title', tag: { expr: `'${tag}' || state` } },
  filter: "state <> 'gone'",
});

function recordedSeqs(target: string): number[] {
  const db = openDatabase(target, { readonly: true });
  try {
    return (db.prepare('SELECT seq FROM applications ORDER BY rowid').pluck().all() as bigint[]).map(Number);
  } finally {
    db.close();
  }
}

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('killed at every phase boundary (before a commit, after one, before the acknowledgement, after a rebuild step) while an application writes, run again converges exact without applying an event twice', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const config = path.join(tmp, 'sluice.yml');
    const stopFile = path.join(tmp, 'stop');
    appSource(src, 600);
    put(path.join(tmp, 'recorder.mjs'), RECORDER);
    put(path.join(tmp, 'defs', 'open-issues.json'), JSON.stringify(mapDef('v1:')));
    put(
      path.join(tmp, 'defs', 'comments-search.json'),
      JSON.stringify({ name: 'comments_search', source: 'comments', kind: 'fts5', columns: ['body'] }),
    );
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues, comments]
    targets:
      - path: cache.db
        projections:
          - "*"
          - defs/open-issues.json
          - defs/comments-search.json
          - {name: comment_log, source: comments, kind: custom, module: ./recorder.mjs}
listen: 127.0.0.1:${port}
`,
    );

    const start = (env: Record<string, string> = {}) => (running = startRun(config, { SLUICE_BUILD_CHUNK: CHUNK, ...env }));
    const crash = async (at: string): Promise<void> => {
      const r = start({ SLUICE_CRASH_AT: at });
      const exit = await r.exited;
      expect(exit.signal, `run with SLUICE_CRASH_AT=${at} should die by SIGKILL: ${r.stderr()}`).toBe('SIGKILL');
    };
    /** Run again without a crash point: it catches up with the writer, and what it holds is exact; then SIGTERM. */
    const converges = async (at: string): Promise<void> => {
      const r = start();
      const seq = sourceSeq(src);
      await waitHealth(
        port,
        `the run after the crash at ${at} caught up with seq ${seq}`,
        (h) => h.code === 200 && h.status.targets.every((t) => t.projections.every((p) => p.seq >= seq)),
        60_000,
      );
      const v = await verify(src, tgt);
      expect(
        v.projections.filter((p) => !p.ok).map((p) => p.name),
        `after the crash at ${at}`,
      ).toEqual([]);
      r.child.kill('SIGTERM');
      expect((await r.exited).status, r.stderr()).toBe(0);
    };

    // The application commits all along: updates, new comments, deletions.
    writer = spawn(PYTHON, [
      '-c',
      `import sqlite3, sys, os, time
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA busy_timeout = 10000")
i = 0
while not os.path.exists(sys.argv[2]):
    i += 1
    con.execute("UPDATE issues SET title = 'w' || ?, state = CASE WHEN ? % 3 = 0 THEN 'gone' ELSE 'open' END WHERE id = ? % 600 + 1", (i, i, i))
    con.execute("INSERT INTO comments (issue_id, body) VALUES (?, 'written ' || ?)", (i % 600 + 1, i))
    if i % 5 == 0:
        con.execute("DELETE FROM comments WHERE id = (SELECT min(id) FROM comments)")
    con.commit()
    time.sleep(0.003)`,
      src,
      stopFile,
    ]);
    const wrote = new Promise<number | null>((resolve) => writer?.on('close', resolve));

    // Killed before the first batch of the first build commits: nothing is built yet.
    await crash('before-commit');
    await converges('before-commit');
    for (const at of ['after-commit', 'before-ack']) {
      await crash(at);
      await converges(at);
    }
    // A changed map definition rebuilds beside the live one, one step of 200 rows at a time: killed after its first step.
    put(path.join(tmp, 'defs', 'open-issues.json'), JSON.stringify(mapDef('v2:')));
    await crash('build-step');
    await converges('build-step');

    fs.writeFileSync(stopFile, '');
    expect(await wrote).toBe(0);
    await converges('the end');
    const map = openDatabase(tgt, { readonly: true });
    try {
      expect(map.prepare("SELECT count(*) FROM open_issues WHERE tag NOT LIKE 'v2:%'").pluck().get()).toBe(0n);
    } finally {
      map.close();
    }
    // Each comments event given to the custom projection once, in seq order, from its build to the last one written.
    const seen = recordedSeqs(tgt);
    expect(seen.length).toBeGreaterThan(50);
    const s = openDatabase(src, { readonly: true });
    try {
      expect(seen).toEqual(journalSeqs(s, 'comments', (seen[0] as number) - 1));
    } finally {
      s.close();
    }
  }, 120_000);
});
