// verify prints the repair command of each mismatch and running it makes verify pass
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { REASONS, repairFor } from '../../../src/reasons.ts';
import { BIN, runCliAsync, parseJson, makeDir, removeDir, trackerSource } from '../../cli/support/cli.ts';

/*
 * verify, like health, says what repairs what it found: for each projection
 * whose rows differ from the source it prints the catalog's repair (the
 * ROWS_DIFFER template of src/reasons.ts) with the real paths and name,
 * quoted for a shell, and --json carries the same text as `repair`. Doing
 * what it says makes verify pass. The target lags its source too, so the
 * difference is found at the cursor (verify-rewind.ts), not only when
 * caught up.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  // A space in the folder: the printed command must quote the paths to be typed as is.
  dir = path.join(makeDir(), 'my data');
  fs.mkdirSync(dir);
  src = trackerSource(at('app.db'), ['issues', 'labels']);
  tgt = at('cache.db');
  await sync(src, tgt);
});
afterAll(() => removeDir(path.dirname(dir)));

/** The POSIX shell form of a path, as the printed command must spell it. */
const quoted = (p: string) => `'${p.replaceAll("'", "'\\''")}'`;

describe.skipIf(process.platform === 'win32')('verify and the repair of a mismatch', () => {
  test('prints the rendered repair for the projection that differs, and running it makes verify exit 0', async () => {
    // The source moves on (the target now lags), and another program edits one target row.
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE issues SET title = title || ' (edited)' WHERE repo_id = 1")
con.commit()
t = sqlite3.connect(sys.argv[2])
t.execute("UPDATE issues SET title = 'hacked' WHERE repo_id = 3 AND number = 17")
t.commit()`,
      [src, tgt],
    );
    const expected = repairFor('ROWS_DIFFER', { source: quoted(src), target: quoted(tgt), projection: 'issues' });
    expect(expected).toContain(`sluice reinit ${quoted(src)} ${quoted(tgt)} issues`);

    const human = await runCliAsync(['verify', src, tgt]);
    expect(human.status, human.stderr).toBe(3);
    const lines = human.stdout.split('\n');
    const at = lines.findIndex((l) => /^issues: MISMATCH different \[3,17\]/.test(l));
    expect(at, human.stdout).toBeGreaterThanOrEqual(0);
    expect(lines[at + 1], human.stdout).toBe(`   -> ${expected}`);
    // The projection that is equal gets no repair.
    expect(human.stdout).toMatch(/^labels: ok/m);
    expect(human.stdout.match(/->/g)).toHaveLength(1);

    const json = await runCliAsync(['verify', src, tgt, '--json']);
    expect(json.status, json.stderr).toBe(3);
    const v = parseJson(json, S.verifyOutput);
    const byName = Object.fromEntries(v.projections.map((p) => [p.name, p]));
    expect(byName.issues).toMatchObject({ ok: false, diffs: [{ key: [3, 17], kind: 'different' }], repair: expected });
    expect(byName.issues?.inFlight).toBeGreaterThan(0);
    expect(byName.labels?.ok).toBe(true);
    expect(byName.labels?.repair).toBeUndefined();
    // A verify code of the catalog, with a repair of its own (not the fallback for suspensions).
    expect((REASONS as Record<string, { kinds: readonly string[]; repair: string | null }>).ROWS_DIFFER?.kinds).toContain('verify');

    // Doing what it says, typed into a shell as printed: the command is the repair's `sluice ...` part.
    const command = /sluice (reinit .*)$/.exec(expected)?.[1];
    expect(command).toBeDefined();
    const ran = spawnSync('sh', ['-c', `${quoted(process.execPath)} ${quoted(BIN)} ${command ?? ''}`], { encoding: 'utf8' });
    expect(ran.status, ran.stderr).toBe(0);
    const after = await runCliAsync(['verify', src, tgt, '--json']);
    expect(after.status, after.stderr).toBe(0);
    expect(parseJson(after, S.verifyOutput).projections.every((p) => p.ok && p.repair === undefined)).toBe(true);
  });
});
