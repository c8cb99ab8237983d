// sluice run rebuilds a target whose source is restored from an older copy (a file copied over it) while it runs
import fs from 'node:fs';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { dumpTables, type Spawned } from '../../cli/support/cli.ts';
import { kill, py, runAppPipeline, waitForRun } from '../support/run.ts';

/*
 * A restore copies an older file over the source (cp bak.db app.db, after
 * a checkpoint that left the -wal empty): the inode stays, so the file is
 * not "replaced" (SOURCE_REPLACED), and SQLite's data_version does not move
 * for a connection that has the file open, which keeps the pages it cached.
 * The follower used to notice only at the application's next write: until
 * then the target held rows the source does not, and /healthz said 200.
 * docs/deploy.md promises run sees the restore and rebuilds the target.
 */

/** Whether the target's mirrors hold the source's rows (false while it cannot be read, mid-rebuild). */
function same(tgt: string, src: string): boolean {
  try {
    return JSON.stringify(dumpTables(tgt, ['issues', 'comments'])) === JSON.stringify(dumpTables(src, ['issues', 'comments']));
  } catch {
    return false;
  }
}

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('rebuilds the target within seconds when the source is restored from an older copy, with no write after it', async ({ tmp }) => {
    const { src, tgt, run } = await runAppPipeline(tmp);
    running = run;
    const bak = `${src}.bak`;
    py(src, `b = sqlite3.connect(${JSON.stringify(bak)})\ncon.backup(b)\nb.close()`); // a backup, in WAL mode as the source
    py(
      src,
      `con.execute("INSERT INTO issues VALUES (900, 'after the backup', 'open')")\ncon.execute("UPDATE issues SET title = 'changed' WHERE id = 1")`,
    );
    await waitForRun(run, 'the writes after the backup applied', () => dumpTables(tgt, ['issues']).issues?.length === 51);

    py(src, `con.execute("PRAGMA wal_checkpoint(TRUNCATE)")`);
    fs.copyFileSync(bak, src); // over the file, in place (as cp does): the same inode
    await waitForRun(run, 'the target rebuilt from the restored source', () => same(tgt, src), 10_000);
    const v = await verify(src, tgt);
    expect(v.projections.filter((p) => !p.ok).map((p) => p.name)).toEqual([]);
  }, 90_000);
});
