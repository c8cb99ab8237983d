// a target that reaches its size limit fails sync with one line and resumes once it is raised
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, expectOneLineError, dumpTables, write, scalar } from '../../cli/support/cli.ts';

/*
 * A target that cannot grow (SQLITE_FULL: the disk is full, or the size
 * limit sync --max-target-mb sets on it with PRAGMA max_page_count) fails
 * sync with one line naming the target, that the disk or the file's size
 * limit is full, and the fix: exit 1, nothing of the batch committed (rows
 * and cursor as they were). Once the limit is raised, the next sync resumes
 * and the target equals the source.
 */

let dir: string;

beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

const cursorOf = (target: string) => scalar(target, "SELECT cursor FROM _sluice_projections WHERE name = 'issues'");

describe('a target at its size limit', () => {
  test('sync fails with TARGET_FULL naming the target, the cause and the fix, exit 1; the target is unchanged; raised, it resumes exactly', async () => {
    const src = trackerSource(path.join(dir, 'app.db'), ['issues']);
    const target = path.join(dir, 'cache.db');
    await sync(src, target);
    // About 4 MB more for the target than the 1 MB limit allows.
    write(src, "UPDATE issues SET body = body || printf('%.20000c', 'x')");
    const before = { rows: dumpTables(target), cursor: cursorOf(target) };
    const r = await runCliAsync(['sync', src, target, '--max-target-mb', '1']);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'TARGET_FULL');
    expect(r.stderr).toContain(target);
    expect(r.stderr).toContain("the disk or the file's size limit is full");
    expect(r.stderr).toContain('--max-target-mb');
    expect(r.stderr).toContain('Free disk space');
    expect(dumpTables(target)).toEqual(before.rows);
    expect(cursorOf(target)).toBe(before.cursor);
    const again = await runCliAsync(['sync', src, target, '--max-target-mb', '64']);
    expect(again.status, again.stderr).toBe(0);
    expect(dumpTables(target, ['issues'])).toEqual(dumpTables(src, ['issues']));
  });
});
