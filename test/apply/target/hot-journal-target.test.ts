// verify and explain on a target with a hot journal name its -journal and the fix, and leave it as it is
import path from 'node:path';
import { test, expect, leaveHotJournal, runSqliteCli, filesIn } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { runCliAsync, trackerSource } from '../../cli/support/cli.ts';

/*
 * verify and explain only read the target: they attach it to a read-only
 * source connection, which may not roll back a hot journal left beside it by
 * a writer killed mid-transaction. They failed with SQLite's bare
 * "SQLITE_READONLY_ROLLBACK: attempt to write a readonly database", naming
 * neither the file nor the fix. They say what health, plan and the other
 * readers say (DB_OPEN_FAILED, the -journal, and that one open with write
 * access rolls it back), and leave the files as they are.
 */
test('verify and explain exit 1 with DB_OPEN_FAILED naming the hot journal of the target and the fix, changing no file', async ({
  tmp,
}) => {
  const src = trackerSource(path.join(tmp, 'app.db'), ['issues']);
  const tgt = path.join(tmp, 'cache.db');
  await sync(src, tgt);
  runSqliteCli(tgt, 'PRAGMA journal_mode = delete;');
  // A program writing the target killed in the middle of a transaction that had spilled to the file.
  leaveHotJournal(tgt);
  // The target's files (a reader of the WAL source may make its -wal and -shm).
  const targetFiles = () => Object.fromEntries(Object.entries(filesIn(tmp)).filter(([f]) => f.startsWith('cache.db')));
  const before = targetFiles();
  expect(Object.keys(before)).toEqual(['cache.db', 'cache.db-journal']);
  for (const command of ['verify', 'explain']) {
    const r = await runCliAsync([command, src, tgt]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /^sluice: DB_OPEN_FAILED: Cannot read target .*cache\.db: .*cache\.db-journal is a hot journal.*rolls it back/,
    );
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(targetFiles(), `${command} changed a file of the target`).toEqual(before);
  }
});
