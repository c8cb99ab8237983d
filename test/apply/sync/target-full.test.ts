// a full target stops the run with target full and commits nothing
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect } from '../../support/fixtures.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { FileFullError } from '../../../src/errors.ts';
import { makeDir, removeDir, trackerSource, dumpTables, write, scalar } from '../../cli/support/cli.ts';

/*
 * SQLITE_FULL from the target (here: PRAGMA max_page_count on the syncer's
 * own connection, SQLite's real limit, as a full disk would) is not a
 * per-projection failure the run goes past: it throws TARGET_FULL naming the
 * target, with nothing of the batch committed; the same syncer, once the
 * target may grow, resumes exactly.
 */

let dir: string;
beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

test('a batch that does not fit throws TARGET_FULL, leaves the rows and cursor of the batch as they were, and the next run once it fits resumes', async () => {
  const src = trackerSource(path.join(dir, 'app.db'), ['issues', 'comments']);
  const target = path.join(dir, 'cache.db');
  await sync(src, target);
  write(src, "UPDATE issues SET body = body || printf('%.20000c', 'x')");
  const before = {
    rows: dumpTables(target, ['issues']),
    cursors: scalar(target, "SELECT cursor FROM _sluice_projections WHERE name = 'issues'"),
  };
  const s = await Syncer.open(src, target);
  try {
    const pages = Number(s.session.db.pragma('tgt.page_count', { simple: true }));
    s.session.db.pragma(`tgt.max_page_count = ${pages + 10}`);
    const err = await s.runOnce().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(FileFullError);
    expect((err as FileFullError).code).toBe('TARGET_FULL');
    expect((err as Error).message).toContain(target);
    expect((err as Error).message).toContain("the disk or the file's size limit is full");
    expect(dumpTables(target, ['issues'])).toEqual(before.rows); // comments, with nothing to apply, may have moved its cursor
    expect(scalar(target, "SELECT cursor FROM _sluice_projections WHERE name = 'issues'")).toBe(before.cursors);
    s.session.db.pragma('tgt.max_page_count = 1073741823');
    const report = await s.runOnce();
    expect(report.projections.every((p) => p.error === undefined && p.state === 'active')).toBe(true);
  } finally {
    s.close();
  }
  expect(dumpTables(target, ['issues', 'comments'])).toEqual(dumpTables(src, ['issues', 'comments']));
});
