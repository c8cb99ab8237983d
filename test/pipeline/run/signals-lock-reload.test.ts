// sluice run stops cleanly on sigterm runs once per file and keeps its pipeline through an invalid file
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { afterEach } from 'vitest';
import { test, expect, describe, PYTHON } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson, scalar, sha256, sourceSeq, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, healthz, kill, logLines, put, py, startRun, waitHealth } from '../support/run.ts';

/*
 * `sluice run` as a service (issue 21, item 2): SIGTERM finishes the
 * batches in flight and exits 0, leaving every projection exact at its
 * cursor; a second run of the same file, or a sync --follow of a declared
 * target, is refused naming the process; a file that stops loading keeps
 * the running pipeline going with /healthz 503 until it is fixed; an unset
 * ${VAR} is refused at start with nothing written.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

const pipeline = (port: number, extra = '') => `sources:
  - path: app.db
    capture: [issues, comments]
    targets:
      - path: cache.db
        projections: ["*", {name: open_issues, source: issues, kind: map, columns: {id: id, title: title}, filter: "state = 'open'"}]
listen: 127.0.0.1:${port}
${extra}`;

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('SIGTERM while a writer commits exits 0 with every projection exact at its cursor, and a second run or a sync --follow of its target is refused naming it', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    const port = await freePort();
    put(config, pipeline(port));
    running = startRun(config);
    const pid = running.child.pid as number;
    await waitHealth(port, 'the first build', (h) => h.code === 200);

    const second = await runCliAsync(['run', '--config', config]);
    expect(second.status).toBe(1);
    expect(second.stderr).toContain('RUN_LOCKED');
    expect(second.stderr).toContain(`process ${pid}`);
    const follower = await runCliAsync(['sync', src, tgt, '--follow']);
    expect(follower.status).toBe(1);
    expect(follower.stderr).toContain('TARGET_FOLLOWED');
    expect(follower.stderr).toContain(`process ${pid}`);

    // An application commits as fast as it can; SIGTERM lands in the middle.
    const writer = spawn(PYTHON, [
      '-c',
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA busy_timeout = 10000")
for i in range(1, 4001):
    con.execute("UPDATE issues SET title = 'w' || ?, state = CASE WHEN ? % 2 = 0 THEN 'open' ELSE 'closed' END WHERE id = ? % 50 + 1", (i, i, i))
    con.execute("INSERT INTO comments (issue_id, body) VALUES (?, 'burst')", (i % 50 + 1,))
    con.commit()`,
      src,
    ]);
    const wrote = new Promise<number | null>((resolve) => writer.on('close', resolve));
    const start = sourceSeq(src);
    await waitHealth(
      port,
      'the run applying the writer',
      (h) => h.status.targets[0]?.projections.some((p) => p.seq > start + 200) === true,
    );
    running.child.kill('SIGTERM');
    const exit = await running.exited;
    expect(exit.status, running.stderr()).toBe(0);
    expect(logLines(running).some((l) => l.event === 'stop')).toBe(true);
    expect(await wrote).toBe(0);

    // Whatever was committed is whole: verify compares each projection with the source at its own cursor.
    const v = await runCliAsync(['verify', src, tgt, '--json']);
    expect(v.status, v.stderr).toBe(0);
    const report = parseJson(v, S.verifyOutput);
    expect(report.projections.map((p) => [p.name, p.ok])).toEqual(
      expect.arrayContaining([
        ['comments', true],
        ['issues', true],
        ['open_issues', true],
      ]),
    );
    // The locks went with the process: a sync --follow of the target may start now (and is stopped at once).
    const after = await runCliAsync(['sync', src, tgt]);
    expect(after.status, after.stderr).toBe(0);
  });

  test('a file that stops loading keeps the running pipeline applying with /healthz 503 and its reason, and 200 again once fixed', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    const port = await freePort();
    put(config, pipeline(port));
    running = startRun(config);
    await waitHealth(port, 'the first build', (h) => h.code === 200);

    put(config, pipeline(port, 'targetz: oops\n'));
    const broken = await waitHealth(port, 'the invalid file noticed', (h) => h.status.run.configError !== null);
    expect(broken.code).toBe(503);
    expect(broken.status.ok).toBe(false);
    expect(broken.status.run.configError?.code).toBe('PIPELINE_INVALID');
    expect(broken.status.run.configError?.message).toContain('targetz');
    expect(logLines(running).some((l) => l.event === 'config-invalid' && l.level === 'error')).toBe(true);

    // The old configuration keeps following.
    py(src, `con.execute("UPDATE issues SET title = 'while broken' WHERE id = 7")`);
    await waitHealth(port, 'the write applied', () => scalar(tgt, 'SELECT title FROM issues WHERE id = 7') === 'while broken');
    expect((await healthz(port)).code).toBe(503);

    put(config, pipeline(port));
    const fixed = await waitHealth(port, 'the fixed file loaded', (h) => h.code === 200);
    expect(fixed.status.run.configError).toBeNull();
    expect(fixed.status.ok).toBe(true);
  });

  test('an unset ${VAR} is refused at start with exit 1, and nothing is written', async ({ tmp }) => {
    const src = path.join(tmp, 'app.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    put(
      config,
      `sources:
  - path: \${SLUICE_TEST_UNSET_DB}
    capture: [issues]
    targets: [{path: cache.db, projections: ["*"]}]
`,
    );
    const before = sha256(src);
    const r = await runCliAsync(['run', '--config', config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('SLUICE_TEST_UNSET_DB');
    expect(sha256(src)).toBe(before);
    expect(fs.readdirSync(tmp).sort()).toEqual(['app.db', 'sluice.yml']);
    const usage = await runCliAsync(['run', '--config', config, '--log', 'xml']);
    expect(usage.status).toBe(2);
  });
});
