// health of a protected target whose guard trigger another program dropped needs action: hand edits go in again
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { health, protect } from '../../../src/index.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, syncByLibrary, scalar } from '../../cli/support/cli.ts';

/*
 * A schema tool dropped one of the triggers `sluice protect` put on a
 * mirror's table (it drops the triggers its model does not know). The
 * target still recorded that it was protected, yet the sqlite3 shell could
 * edit the table again, and health (and a sync with nothing to apply) said
 * nothing. health now names the table and the missing trigger, says hand
 * edits may have gone in, and names verify to find them and protect to
 * guard the table again; after protect, health is ok.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

describe('health of a protected target', () => {
  test('a guard trigger dropped by another program: health exits 3 naming it, verify and protect; protect again makes it ok', async () => {
    const src = trackerSource(at('app.db'), ['issues', 'comments']);
    const tgt = at('cache.db');
    expect(await syncByLibrary(src, tgt)).toBe(0);
    protect(tgt, true);
    expect(health(tgt).ok).toBe(true);
    const edit = "UPDATE issues SET title = 'by hand' WHERE repo_id = 1 AND number = 1";
    expect(() => runSqliteCli(tgt, edit)).toThrow(/sluice_protect/);

    const guard = String(
      scalar(
        tgt,
        "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '\\_sluice\\_protect\\_%\\_u' ESCAPE '\\' AND tbl_name = 'issues'",
      ),
    );
    runSqliteCli(tgt, `DROP TRIGGER "${guard}"; ${edit};`);

    const h = health(tgt);
    expect(h.ok).toBe(false);
    const issues = h.projections.find((p) => p.name === 'issues');
    expect(issues?.needsAction).toBe(true);
    expect(issues?.action).toContain(`table issues of projection issues is not guarded any more`);
    expect(issues?.action).toContain(`guard trigger ${guard} is missing`);
    expect(issues?.action).toContain(`sluice verify ${src} ${tgt}`);
    expect(issues?.action).toContain(`sluice protect ${tgt}`);
    expect(h.projections.find((p) => p.name === 'comments')?.needsAction).toBe(false);
    const r = await runCliAsync(['health', tgt]);
    expect(r.status, r.stdout).toBe(3);
    expect(r.stdout).toContain(guard);

    // The repairs it names: protect guards the table again, verify finds the edit that went in.
    expect((await runCliAsync(['protect', tgt])).status).toBe(0);
    expect(health(tgt).ok).toBe(true);
    expect(() => runSqliteCli(tgt, edit)).toThrow(/sluice_protect/);
    expect((await runCliAsync(['verify', src, tgt])).status).toBe(3);
  });
});
