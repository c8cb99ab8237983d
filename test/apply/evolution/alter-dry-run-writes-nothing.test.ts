// alter --dry-run leaves every file as it was: a hot journal is refused, not rolled back, and a -wal left beside is not checkpointed
import path from 'node:path';
import { describe, expect, leaveHotJournal, runPython, runSqliteCli, test, leaveWal, filesIn } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { runCliAsync, trackerSource } from '../../cli/support/cli.ts';

/*
 * A dry run writes nothing. But alter runs its DDL on a connection with
 * write access (to roll it back), and --target attaches the target to that
 * connection, so the target was opened with write access too: a hot journal
 * beside the target (a program writing it killed in the middle of a
 * transaction that had spilled to the file) was rolled back, and a -wal a
 * killed program left was checkpointed into the file and removed, by a dry
 * run that exited 0; the same of the source. Every file is now held as plan
 * holds what it reads (readQuietly): a hot journal is refused as the readers
 * refuse it (DB_OPEN_FAILED naming the -journal and the fix), a file with a
 * -wal beside it is held open read-only so that the dry run's connection is
 * never the last to close it (the last one checkpoints), and the folder is
 * byte for byte what it was (but a -shm a killed program left, which any
 * process that opens the file rewrites).
 */

const DDL = 'ALTER TABLE issues ADD COLUMN due TEXT';

/** app.db (the tracker, issues captured) synced into cache.db, every connection closed. */
async function pair(tmp: string): Promise<{ src: string; tgt: string }> {
  const src = trackerSource(path.join(tmp, 'app.db'), ['issues']);
  const tgt = path.join(tmp, 'cache.db');
  await sync(src, tgt);
  return { src, tgt };
}

const KEPT = ['app.db', 'app.db-shm', 'app.db-wal', 'cache.db', 'cache.db-shm', 'cache.db-wal'];

/**
 * The files but each -shm: SQLite's shared memory, which the first
 * connection of any process to a WAL file a killed program left rebuilds
 * from the -wal (a reader too: the sqlite3 shell's `.tables` does).
 */
function withoutShm(files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(files).filter(([f]) => !f.endsWith('-shm')));
}

const HOT = /^sluice: DB_OPEN_FAILED: Cannot read (source|target) .*\.db: .*\.db-journal is a hot journal.*rolls it back/;

describe('sluice alter --dry-run changes no file', () => {
  test('a target with a hot journal: DB_OPEN_FAILED naming its -journal and the fix, the journal left as it was', async ({ tmp }) => {
    const { src, tgt } = await pair(tmp);
    runSqliteCli(tgt, 'PRAGMA journal_mode = delete;');
    leaveHotJournal(tgt);
    const before = filesIn(tmp);
    expect(Object.keys(before)).toEqual(['app.db', 'cache.db', 'cache.db-journal']);
    const r = await runCliAsync(['alter', src, DDL, '--dry-run', '--target', tgt]);
    expect(filesIn(tmp), 'the dry run changed a file').toEqual(before);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(HOT);
    expect(r.stderr).toContain('cache.db-journal');
  });

  test('a source with a hot journal, with and without --target: DB_OPEN_FAILED naming its -journal, the journal left as it was', async ({
    tmp,
  }) => {
    const { src, tgt } = await pair(tmp);
    runSqliteCli(src, 'PRAGMA journal_mode = delete;');
    leaveHotJournal(src);
    const before = filesIn(tmp);
    expect(Object.keys(before)).toEqual(['app.db', 'app.db-journal', 'cache.db']);
    for (const extra of [[], ['--target', tgt]]) {
      const r = await runCliAsync(['alter', src, DDL, '--dry-run', ...extra]);
      expect(filesIn(tmp), `the dry run ${extra.join(' ')} changed a file`).toEqual(before);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(HOT);
      expect(r.stderr).toContain('app.db-journal');
    }
  });

  test('a target and a source each left with a -wal: the forecast is given, and neither -wal is checkpointed or removed', async ({
    tmp,
  }) => {
    const { src, tgt } = await pair(tmp);
    leaveWal(tgt);
    leaveWal(src);
    const before = withoutShm(filesIn(tmp));
    expect(Object.keys(filesIn(tmp))).toEqual(['app.db', 'app.db-shm', 'app.db-wal', 'cache.db', 'cache.db-shm', 'cache.db-wal']);
    const r = await runCliAsync(['alter', src, DDL, '--dry-run', '--target', tgt]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^dry run \(rolled back\): /);
    expect(r.stdout).toContain(`forecast for ${tgt}`);
    expect(Object.keys(filesIn(tmp)), 'the dry run removed or made a file').toEqual(KEPT);
    expect(withoutShm(filesIn(tmp)), 'the dry run changed a file').toEqual(before);
    const without = await runCliAsync(['alter', src, DDL, '--dry-run']);
    expect(without.status, without.stderr).toBe(0);
    expect(Object.keys(filesIn(tmp)), 'the dry run without --target removed or made a file').toEqual(KEPT);
    expect(withoutShm(filesIn(tmp)), 'the dry run without --target changed a file').toEqual(before);
  });

  test('nothing beside either file: the dry run leaves no -wal, -shm or -journal behind', async ({ tmp }) => {
    const { src, tgt } = await pair(tmp);
    const before = filesIn(tmp);
    expect(Object.keys(before)).toEqual(['app.db', 'cache.db']);
    for (const extra of [[], ['--target', tgt]]) {
      const r = await runCliAsync(['alter', src, DDL, '--dry-run', ...extra]);
      expect(r.status, r.stderr).toBe(0);
      expect(filesIn(tmp), `the dry run ${extra.join(' ')} changed a file`).toEqual(before);
    }
  });
});
