// sluice run captures a declared source again when it is made again while it runs
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { dumpTables, sourceSeq, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, put, py, startRun, waitHealth, runAppPipeline } from '../support/run.ts';

/*
 * The file is the truth about what exists: a declared source that an
 * application deletes and makes again while `run` runs (a reset, a restore
 * without sluice's tables) has its declared tables captured again, as at
 * start, and its target is rebuilt from the new file and follows it,
 * without a restart. /healthz says 503 meanwhile, and 200 once it is so.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('captures a declared source again when it is deleted and made again while it runs, and its target follows the new file exactly', async ({
    tmp,
  }) => {
    const { src, tgt, port, run } = await runAppPipeline(tmp);
    running = run;

    for (const f of [src, `${src}-wal`, `${src}-shm`]) fs.rmSync(f, { force: true });
    await waitHealth(port, 'the lost source noticed', (h) => h.code === 503);
    appSource(src, 20);
    py(src, `con.execute("UPDATE issues SET title = 'after the reset' WHERE id = 4")`);

    await waitHealth(port, 'the new source captured and its target rebuilt', (h) => h.code === 200, 45_000);
    py(src, `con.execute("INSERT INTO comments VALUES (500, 2, 'written after the rebuild')")`);
    const seq = sourceSeq(src);
    await waitHealth(
      port,
      `the write at seq ${seq} applied`,
      (h) => h.code === 200 && h.status.targets.every((t) => t.projections.every((p) => p.seq >= seq)),
    );
    expect(dumpTables(tgt, ['issues', 'comments'])).toEqual(dumpTables(src, ['issues', 'comments']));
    const v = await verify(src, tgt);
    expect(v.projections.map((p) => [p.name, p.ok]).sort()).toEqual([
      ['comments', true],
      ['issues', true],
      ['open_issues', true],
    ]);
  }, 90_000);
});
