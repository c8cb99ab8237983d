// verify catches a tampered target row and names its key
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, write } from '../../cli/support/cli.ts';

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'labels']);
  tgt = at('cache.db');
  await sync(src, tgt);
});
afterAll(() => removeDir(dir));

describe('verify', () => {
  test('a changed, a deleted and an added target row each exit 3 with the key in the diffs', async () => {
    const clean = await runCliAsync(['verify', src, tgt, '--json']);
    expect(clean.status, clean.stderr).toBe(0);
    expect(parseJson(clean, S.verifyOutput).ok).toBe(true);

    // Someone edits the cache behind sluice's back. 'abc' -> 'ABC' is a change even where a NOCASE comparison would not see one.
    write(
      tgt,
      "UPDATE issues SET title = upper(title) WHERE repo_id = 3 AND number = 17; DELETE FROM labels WHERE repo_id = 2 AND name = 'bug'; INSERT INTO labels (repo_id, name, color) VALUES (9, 'extra', x'00')",
    );
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const v = parseJson(r, S.verifyOutput);
    expect(v.ok).toBe(false);
    const byName = Object.fromEntries(v.projections.map((p) => [p.name, p]));
    expect(byName.issues).toMatchObject({ ok: false, diffs: [{ key: [3, 17], kind: 'different' }] });
    expect(byName.labels?.ok).toBe(false);
    expect(byName.labels?.diffs).toEqual(
      expect.arrayContaining([
        { key: [2, 'bug'], kind: 'missing' },
        { key: [9, 'extra'], kind: 'extra' },
      ]),
    );
    expect(byName.labels?.diffs).toHaveLength(2);

    // Without --json: the same exit code, and the readable report names the key.
    const human = await runCliAsync(['verify', src, tgt]);
    expect(human.status, human.stderr).toBe(3);
    expect(human.stdout).toMatch(/issues: MISMATCH .*different \[3,17\]/);
  });
});
