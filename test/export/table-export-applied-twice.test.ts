// an export made with --table, whose batches the target already holds, is applied once: it suspends no other projection
import path from 'node:path';
import { test, expect } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, write, scalar } from '../cli/support/cli.ts';

/*
 * Review round 4. A target built from a full export holds issues and
 * labels. Importing an export of issues alone (--table issues) whose batch
 * the target already applied said "skipped 1 already applied", yet
 * suspended the up-to-date labels projection with TABLE_UNTRACKED (exit 3),
 * and importing the full export again did not clear it: a batch already
 * applied must change nothing, however many tables it carries.
 */

test('importing an already-applied --table export changes nothing and suspends no projection of another table', async () => {
  const dir = makeDir();
  try {
    const src = trackerSource(path.join(dir, 'app.db'), ['issues', 'labels']);
    const full = path.join(dir, 'full.jsonl');
    const issues = path.join(dir, 'issues.jsonl');
    const tgt = path.join(dir, 't.db');
    for (const args of [
      ['export', src, '--out', full],
      ['export', src, '--table', 'issues', '--out', issues],
    ])
      expect((await runCliAsync(args)).status).toBe(0);
    write(src, "UPDATE issues SET title = 'one' WHERE repo_id = 1 AND number = 1");
    write(src, "UPDATE labels SET name = 'x' WHERE rowid = 1");
    for (const args of [
      ['export', src, '--out', full],
      ['export', src, '--table', 'issues', '--out', issues],
      ['import', tgt, full],
    ])
      expect((await runCliAsync(args)).status).toBe(0);
    const again = await runCliAsync(['import', tgt, issues]);
    expect({ status: again.status, out: again.stdout + again.stderr }).toEqual({
      status: 0,
      out: expect.stringContaining('skipped 1 already applied') as unknown,
    });
    expect(scalar(tgt, "SELECT state || ' ' || coalesce(reason, '') FROM _sluice_projections WHERE name = 'labels'")).toBe('active ');
  } finally {
    removeDir(dir);
  }
});
