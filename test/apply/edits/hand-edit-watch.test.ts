// a hand edit of a projection while sync follow runs suspends it with target edited and a users own table does not
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { test, expect, describe, ROOT, runPython, runSqliteCli } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { health } from '../../../src/apply/check/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  write,
  startCli,
  waitFor,
  scalar,
  type Spawned,
} from '../../cli/support/cli.ts';

/*
 * A hand edit of a projection's table in the target (an UPDATE by the
 * sqlite3 shell or by Python) leaves the projection stale until an event
 * happens to touch the edited row. A running `sync --follow` sees that
 * another connection committed to the target (its data_version), reads
 * which pages those commits wrote (the target's WAL), and checks the
 * projections whose tables they wrote: a mirror or a map is compared with
 * the source, an fts5 index's key table too and its index with FTS5's own
 * integrity check, and a custom handler's declared table, which sluice
 * cannot compare, is suspended on the write itself. A detected edit
 * suspends that projection alone (TARGET_EDITED, with its repair); a
 * user's own table in the target, written, vacuumed or grown past a WAL
 * checkpoint, suspends nothing.
 */

let dir: string;
let running: Spawned | undefined;
const at = (f: string) => path.join(dir, f);
const def = (f: string) => path.join(ROOT, 'projections', f);
const DEFS = ['issues-mirror.json', 'open-issues.json', 'issues-search.json', 'comment-counts.ts'];

beforeAll(() => {
  dir = makeDir();
});
afterEach(() => {
  if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  running = undefined;
});
afterAll(() => removeDir(dir));

function states(tgt: string): Record<string, string> {
  return Object.fromEntries(health(tgt).projections.map((p) => [p.name, p.state === 'active' ? 'active' : `${p.state} ${p.reason ?? ''}`]));
}

async function startFollower(name: string): Promise<{ src: string; tgt: string }> {
  const src = trackerSource(at(`${name}.db`), ['issues', 'comments']);
  const tgt = at(`${name}-cache.db`);
  running = startCli(['sync', src, tgt, ...DEFS.flatMap((d) => ['--projection', def(d)]), '--follow', '--json']);
  const f = running;
  await waitFor('the first pass', () => f.stdout().includes('\n'), 60_000);
  return { src, tgt };
}

const ALL_ACTIVE = { issues: 'active', open_issues: 'active', issues_search: 'active', comment_counts: 'active' };

describe('sync --follow and hand edits of its target', () => {
  test('an edit of a mirror, a map, an fts5 index and a custom table each suspends that projection alone with TARGET_EDITED', async () => {
    const { src, tgt } = await startFollower('a');
    const f = running as Spawned;
    expect(states(tgt)).toEqual(ALL_ACTIVE);

    // A user's own table in the target: written by the shell, with rows big enough to overflow a page, then deleted.
    runSqliteCli(
      tgt,
      'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) SELECT hex(randomblob(5000)) FROM (SELECT 1 UNION SELECT 2);',
    );
    runSqliteCli(tgt, 'DELETE FROM notes WHERE id = 1; VACUUM;');

    // The mirror: one title changed by Python.
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE issues SET title = 'hacked' WHERE repo_id = 2 AND number = 5")
con.commit()`,
      [tgt],
    );
    await waitFor('the mirror to be suspended', () => states(tgt).issues === 'suspended TARGET_EDITED', 20_000);
    // The user's own table, written before the edit, suspended nothing.
    expect(states(tgt)).toEqual({ ...ALL_ACTIVE, issues: 'suspended TARGET_EDITED' });

    // The map: a row deleted by the shell.
    runSqliteCli(tgt, 'DELETE FROM open_issues WHERE repo = 1 AND num = (SELECT min(num) FROM open_issues WHERE repo = 1);');
    await waitFor('the map to be suspended', () => states(tgt).open_issues === 'suspended TARGET_EDITED', 20_000);

    // The fts5 index itself (not its key table): an entry planted through FTS5.
    runSqliteCli(tgt, "INSERT INTO issues_search (rowid, title, body) VALUES (987654, 'planted', 'planted');");
    await waitFor('the fts5 index to be suspended', () => states(tgt).issues_search === 'suspended TARGET_EDITED', 20_000);

    // The custom handler's declared table.
    runSqliteCli(tgt, 'UPDATE comment_counts SET comments = comments + 1 WHERE rowid = (SELECT min(rowid) FROM comment_counts);');
    await waitFor('the custom projection to be suspended', () => states(tgt).comment_counts === 'suspended TARGET_EDITED', 20_000);

    // The follower keeps running, and the user's table still takes writes.
    expect(f.child.exitCode).toBeNull();
    runSqliteCli(tgt, "INSERT INTO notes (body) VALUES ('still writable');");
    expect(scalar(tgt, "SELECT count(*) FROM notes WHERE body = 'still writable'")).toBe(1n);

    const h = await runCliAsync(['health', tgt, '--json']);
    expect(h.status, h.stderr).toBe(3);
    const hj = parseJson(h, S.healthOutput);
    for (const p of hj.projections) {
      expect(p, p.name).toMatchObject({ state: 'suspended', reason: 'TARGET_EDITED', needsAction: true });
      expect(p.action, p.name).toContain(`sluice reinit ${src} ${tgt} ${p.name}`);
    }
    // verify clears an edit once the rows are equal again only where it can compare them: the repair says a custom handler's tables need the rebuild.
    const counts = hj.projections.find((p) => p.name === 'comment_counts');
    expect(counts?.action).toMatch(/custom handler's tables[^;]*only a rebuild clears/);
    const issues = hj.projections.find((p) => p.name === 'issues');
    expect(issues?.detail).toMatchObject({ tables: ['issues'], diffs: [{ key: [2, 5], kind: 'different' }] });
    f.child.kill('SIGTERM');
    // It leaves them suspended: exit 3, as a one-shot sync of the target then would (docs/cli.md).
    expect((await f.exited).status).toBe(3);
    // verify cannot compare a custom handler's tables: it says so for that kind, not as for a contentless index.
    const v = await runCliAsync(['verify', src, tgt, '--json']);
    expect(v.status, v.stderr).toBe(3);
    const custom = parseJson(v, S.verifyOutput).projections.find((p) => p.name === 'comment_counts');
    expect(custom).toMatchObject({ ok: false, reason: 'TARGET_EDITED' });
    expect(custom?.skipped).toContain('custom projection comment_counts');
    expect(custom?.skipped).not.toContain('FTS5');
  });

  test("writes to a user's own table past a WAL checkpoint, and another sluice sync of the same target, suspend nothing", async () => {
    const { src, tgt } = await startFollower('b');
    const f = running as Spawned;
    // Enough pages for the shell's own checkpoint (1000 frames) and WAL restarts, in many commits.
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, b BLOB)")
con.commit()
for i in range(300):
    con.execute("INSERT INTO blobs (b) VALUES (randomblob(9000))")
    if i % 3 == 0:
        con.execute("DELETE FROM blobs WHERE id = ?", (i // 2,))
    con.commit()`,
      [tgt],
    );
    // Another sluice process applies the same projections while the follower runs.
    write(src, "UPDATE issues SET title = 'from the app' WHERE repo_id = 1 AND number = 3");
    const other = await runCliAsync(['sync', src, tgt, ...DEFS.flatMap((d) => ['--projection', def(d)])]);
    expect(other.status, other.stderr).toBe(0);
    // A later edit is found, so everything before it was looked at.
    runSqliteCli(tgt, "UPDATE issues_search_src SET title = 'hacked' WHERE rowid = (SELECT min(rowid) FROM issues_search_src);");
    await waitFor('the fts5 projection to be suspended', () => states(tgt).issues_search === 'suspended TARGET_EDITED', 20_000);
    expect(states(tgt)).toEqual({ ...ALL_ACTIVE, issues_search: 'suspended TARGET_EDITED' });
    expect(f.child.exitCode).toBeNull();
  });
});
