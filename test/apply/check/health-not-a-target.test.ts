// health of a file that is no sluice target (the source passed by mistake, an emptied file, a plain database) refuses with NOT_A_TARGET instead of an empty ok
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, trackerSource } from '../../cli/support/cli.ts';

/*
 * health read whatever projections a file held, and a file holding none
 * printed "no projections in this target", {"ok": true}, exit 0: the
 * source passed in place of its target, a target emptied to 0 bytes, any
 * database. verify and protect already refused such a file; health now
 * does too (exit 1, naming what the file is), and a real target with no
 * projections left (all dropped) still reads as it did.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

describe('health of a file that is no target', () => {
  test('the source, an emptied target and a plain database exit 1 with NOT_A_TARGET; a target whose projections were all dropped is ok', async () => {
    const src = trackerSource(at('app.db'), ['issues']);
    expect((await runCliAsync(['sync', src, at('cache.db')])).status).toBe(0);
    const ofSource = await runCliAsync(['health', src, '--json']);
    expect(ofSource.status, ofSource.stdout).toBe(1);
    expect(ofSource.stderr).toMatch(/NOT_A_TARGET: .*app\.db is not a sluice target .*it is a source/);

    fs.writeFileSync(at('emptied.db'), '');
    runSqliteCli(at('plain.db'), 'CREATE TABLE t (id INTEGER PRIMARY KEY)');
    for (const f of ['emptied.db', 'plain.db']) {
      const r = await runCliAsync(['health', at(f)]);
      expect(r.status, `${f}: ${r.stdout}`).toBe(1);
      expect(r.stderr).toMatch(/NOT_A_TARGET/);
    }

    expect((await runCliAsync(['drop', at('cache.db'), 'issues'])).status).toBe(0);
    const none = await runCliAsync(['health', at('cache.db')]);
    expect(none.stdout).toMatch(/no projections in this target/);
    expect(none.status).toBe(0);
  });
});
