// enable on a sync target refuses with target not source and writes nothing
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, expectOneLineError, sha256, scalar } from '../cli/support/cli.ts';

/*
 * A sync target holds sluice's target metadata (_sluice_target,
 * _sluice_projections), which are sluice's own objects, not a user's that
 * happen to borrow the prefix. `enable` on such a file is a mix-up of the two
 * files: it says so (TARGET_NOT_SOURCE, exit 1), names the source the target
 * is synced from, and writes nothing.
 */

let dir: string;
let src: string;
let target: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues']);
  target = at('cache.db');
  await sync(src, target);
});
afterAll(() => removeDir(dir));

describe('enable on a sync target', () => {
  test('exits 1 with TARGET_NOT_SOURCE naming the target and its source, and the target is unchanged', async () => {
    const before = sha256(target);
    const r = await runCliAsync(['enable', target, 'issues', '--json']);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'TARGET_NOT_SOURCE');
    expect(r.stderr).toContain(target);
    expect(r.stderr).toContain('sluice target');
    expect(r.stderr).toContain(`sluice enable ${src}`);
    expect(r.stderr).not.toContain('not made by sluice');
    expect(parseJson(r, S.errorOutput).error.code).toBe('TARGET_NOT_SOURCE');
    expect(sha256(target)).toBe(before);
    expect(scalar(target, "SELECT count(*) FROM sqlite_schema WHERE name = '_sluice_state'")).toBe(0n);
    expect(scalar(target, 'PRAGMA journal_mode')).toBe('wal');
  });

  test('a user table that merely borrows the prefix is still a NAMESPACE_COLLISION', async () => {
    const other = trackerSource(at('other.db'), []);
    const db = openDatabase(other);
    try {
      db.exec('CREATE TABLE _sluice_notes (id INTEGER PRIMARY KEY, note TEXT)');
    } finally {
      db.close();
    }
    const r = await runCliAsync(['enable', other, 'issues']);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'NAMESPACE_COLLISION');
  });
});
