// sluice run builds follows and reloads a pipeline and a deleted target comes back exact
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson, dumpTables, scalar, sourceSeq, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, healthz, kill, put, py, startRun, waitFor, waitHealth } from '../support/run.ts';

/*
 * `sluice run` keeps a pipeline file true (issue 21, item 2): it enables the
 * declared capture, builds every declared projection (a mirror of "*", an
 * inline map, an fts5 definition file), follows an application writing
 * the source (Python), takes in a table added to the file (on SIGHUP, and on
 * the file change alone), and after a crash (SIGKILL) and the loss of its
 * target, builds it again: every projection exact, as verify checks it.
 */

let running: Spawned | undefined;
afterEach(({ task }) => {
  // A failure says what the run logged (a reload that never came, a part failing): the wait's timeout alone does not.
  if (task.result?.state === 'fail' && running !== undefined)
    process.stderr.write(
      `sluice run ${running.child.exitCode === null && running.child.signalCode === null ? 'still running' : `ended (exit code ${running.child.exitCode}, signal ${running.child.signalCode})`}; its log, its end:\n${running.stdout().slice(-6000)}\n${running.stderr().slice(-3000)}\n`,
    );
  kill(running);
});

/** verify of every projection: all exact, and exactly these. */
async function expectExact(src: string, tgt: string, names: readonly string[]): Promise<void> {
  const v = await runCliAsync(['verify', src, tgt, '--json']);
  expect(v.status, v.stderr).toBe(0);
  const r = parseJson(v, S.verifyOutput);
  expect(r.projections.filter((p) => !p.ok)).toEqual([]);
  expect(r.projections.map((p) => p.name).sort()).toEqual([...names].sort());
}

/** Waits until every projection of the target is at the source's seq (the run applied everything written so far). */
async function caughtUp(port: number, src: string): Promise<void> {
  const seq = sourceSeq(src);
  await waitHealth(
    port,
    `every projection at seq ${seq}`,
    (h) => h.code === 200 && h.status.targets.every((t) => t.projections.every((p) => p.seq >= seq)),
  );
}

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('builds every declared projection, follows a Python writer exactly, takes in a table added to the file on SIGHUP or on the change alone, and a target deleted after SIGKILL comes back whole', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    put(
      path.join(tmp, 'defs', 'comments-search.json'),
      JSON.stringify({ name: 'comments_search', source: 'comments', kind: 'fts5', columns: ['body'] }),
    );
    const port = await freePort();
    const file = (tables: readonly string[]) =>
      put(
        config,
        `# a pipeline as a user writes one
sources:
  - path: app.db
    capture: [${tables.join(', ')}]
    targets:
      - path: cache.db
        projections:
          - "*"
          - defs/comments-search.json
          - {name: open_issues, source: issues, kind: map, columns: {id: id, title: title}, filter: "state = 'open'"}
listen: 127.0.0.1:${port}
`,
      );
    file(['issues', 'comments']);
    running = startRun(config);
    const first = await waitHealth(port, 'the first build', (h) => h.code === 200);
    expect(first.status.ok).toBe(true);
    expect(first.status.run.configError).toBeNull();
    expect(first.status.targets[0]?.projections.map((p) => p.name).sort()).toEqual([
      'comments',
      'comments_search',
      'issues',
      'open_issues',
    ]);

    // The application writes; run follows.
    py(
      src,
      `for i in range(1, 31):
    con.execute("UPDATE issues SET title = 'renamed ' || id, state = CASE WHEN id % 3 = 0 THEN 'closed' ELSE 'open' END WHERE id = ?", (i,))
    con.commit()
con.execute("INSERT INTO comments VALUES (1000, 1, 'a new comment about valves')")
con.execute("DELETE FROM comments WHERE id <= 10")`,
    );
    await caughtUp(port, src);
    expect(dumpTables(tgt, ['issues', 'comments'])).toEqual(dumpTables(src, ['issues', 'comments']));
    await expectExact(src, tgt, ['comments', 'comments_search', 'issues', 'open_issues']);

    // A table added to the file, then SIGHUP: captured and mirrored.
    py(
      src,
      `con.execute("CREATE TABLE labels (id INTEGER PRIMARY KEY, name TEXT)")
con.executemany("INSERT INTO labels VALUES (?, ?)", [(i, f"label {i}") for i in range(1, 21)])`,
    );
    file(['issues', 'comments', 'labels']);
    running.child.kill('SIGHUP');
    await waitFor(
      'labels mirrored',
      () => fs.existsSync(tgt) && JSON.stringify(dumpTables(tgt, ['labels'])) === JSON.stringify(dumpTables(src, ['labels'])),
    );
    // ... and another by the file change alone.
    py(
      src,
      `con.execute("CREATE TABLE milestones (id INTEGER PRIMARY KEY, due TEXT)")
con.executemany("INSERT INTO milestones VALUES (?, ?)", [(i, f"2026-0{i}-01") for i in range(1, 6)])`,
    );
    file(['issues', 'comments', 'labels', 'milestones']);
    await waitFor(
      'milestones mirrored',
      () => JSON.stringify(dumpTables(tgt, ['milestones'])) === JSON.stringify(dumpTables(src, ['milestones'])),
    );
    py(
      src,
      `con.execute("UPDATE labels SET name = 'relabelled' WHERE id = 3")
con.execute("INSERT INTO milestones VALUES (6, '2026-12-01')")`,
    );
    await caughtUp(port, src);
    const all = ['comments', 'comments_search', 'issues', 'labels', 'milestones', 'open_issues'];
    await expectExact(src, tgt, all);
    const reloads = running
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"event":"reload"'));
    expect(reloads.some((l) => l.includes('SIGHUP')) && reloads.some((l) => l.includes('a file changed'))).toBe(true);

    // A crash, the target lost, more writes: run again builds every declared projection.
    running.child.kill('SIGKILL');
    await running.exited;
    for (const f of [tgt, `${tgt}-wal`, `${tgt}-shm`]) fs.rmSync(f, { force: true });
    py(
      src,
      `con.execute("UPDATE issues SET state = 'closed' WHERE id <= 5")
con.execute("INSERT INTO labels VALUES (99, 'after the crash')")`,
    );
    running = startRun(config);
    await caughtUp(port, src);
    expect((await healthz(port)).status.targets[0]?.projections.map((p) => p.name).sort()).toEqual(all);
    await expectExact(src, tgt, all);
    expect(dumpTables(tgt, ['issues', 'comments', 'labels', 'milestones'])).toEqual(
      dumpTables(src, ['issues', 'comments', 'labels', 'milestones']),
    );
  });
  test('a definition file changed while it runs is taken in as sync takes it: its projection rebuilt (DEFINITION_CHANGED) and exact, the others followed', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const config = path.join(tmp, 'sluice.yml');
    const def = path.join(tmp, 'search.json');
    appSource(src);
    put(def, JSON.stringify({ name: 'comments_search', source: 'comments', kind: 'fts5', columns: ['body'] }));
    const port = await freePort();
    put(
      config,
      `sources:\n  - path: app.db\n    capture: [issues, comments]\n    targets: [{path: cache.db, projections: ["*", search.json]}]\nlisten: 127.0.0.1:${port}\n`,
    );
    running = startRun(config);
    const r = running;
    await waitHealth(port, 'the first build', (h) => h.code === 200);
    put(def, JSON.stringify({ name: 'comments_search', source: 'comments', kind: 'fts5', columns: ['body', 'issue_id'] }));
    await waitFor('the rebuild', () =>
      r
        .stderr()
        .split('\n')
        .some((l) => l.includes('"event":"built"') && l.includes('comments_search') && l.includes('DEFINITION_CHANGED')),
    );
    py(src, `con.execute("INSERT INTO comments VALUES (7000, 3, 'after the new definition')")`);
    await caughtUp(port, src);
    await expectExact(src, tgt, ['comments', 'comments_search', 'issues']);
    expect(scalar(tgt, "SELECT count(*) FROM comments_search WHERE comments_search MATCH 'definition'")).toBe(1n);
  });
});
