// a hand edit made between two one shot syncs is found by verify which suspends it until verify finds it equal
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, scalar, syncByLibrary } from '../../cli/support/cli.ts';

/*
 * What a one-shot `sync` can see of a hand edit (docs/projections.md, "Hand
 * edits"): an edit made while no sluice process has the target open leaves
 * no trace a later process can read cheaply (in WAL mode SQLite does not
 * even move the header's change counter), so the next one-shot sync goes on
 * from its cursor, exit 0, until an event touches the edited row. `verify`
 * compares every row: it names the key, exits 3, and suspends the
 * projection (TARGET_EDITED), so health exits 3 too; once the edit is
 * undone, verify finds it equal and clears it, and sync goes on.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

describe('a hand edit between one-shot syncs', () => {
  test('sync does not see it; verify does, and health stays at exit 3 until verify finds the rows equal again', async () => {
    const src = trackerSource(at('app.db'), ['issues']);
    const tgt = at('cache.db');
    // The first sync is the setup (through the library the CLI runs); the one-shot syncs under test run the CLI.
    expect(await syncByLibrary(src, tgt)).toBe(0);
    const title = scalar(tgt, 'SELECT title FROM issues WHERE repo_id = 3 AND number = 7') as string;

    runSqliteCli(tgt, "UPDATE issues SET title = 'hacked' WHERE repo_id = 3 AND number = 7;");
    // The documented blind spot of a one-shot sync: nothing tells it the file was written since its last commit.
    const blind = await runCliAsync(['sync', src, tgt, '--json']);
    expect(blind.status, blind.stderr).toBe(0);

    const v = await runCliAsync(['verify', src, tgt, '--json']);
    expect(v.status, v.stderr).toBe(3);
    expect(parseJson(v, S.verifyOutput).projections[0]).toMatchObject({ ok: false, diffs: [{ key: [3, 7], kind: 'different' }] });

    const h = await runCliAsync(['health', tgt, '--json']);
    expect(h.status, h.stderr).toBe(3);
    const p = parseJson(h, S.healthOutput).projections[0];
    expect(p).toMatchObject({ name: 'issues', state: 'suspended', reason: 'TARGET_EDITED', needsAction: true });
    expect(p?.action).toContain(`sluice verify ${src} ${tgt}`);
    // Suspended: sync applies nothing to it until the record clears.
    const held = await runCliAsync(['sync', src, tgt]);
    expect(held.status, held.stderr).toBe(3);

    // Undo the edit: verify finds the rows equal, clears the record, and health is green again.
    runSqliteCli(tgt, `UPDATE issues SET title = '${title.replaceAll("'", "''")}' WHERE repo_id = 3 AND number = 7;`);
    const again = await runCliAsync(['verify', src, tgt, '--json']);
    expect(again.status, again.stderr).toBe(0);
    const ok = await runCliAsync(['health', tgt, '--json']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(parseJson(ok, S.healthOutput).projections[0]).toMatchObject({ state: 'active', reason: null });
    const resumed = await runCliAsync(['sync', src, tgt]);
    expect(resumed.status, resumed.stderr).toBe(0);
  });
});
