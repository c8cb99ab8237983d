// /healthz judges a target against the file as health --config does: what plan says the file's definitions cannot do is a problem of both
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { parseJson, runCliAsync, type Spawned } from '../../cli/support/cli.ts';
import { pipelineHealthOutput } from '../../../src/cli/index.ts';
import { appSource, freePort, kill, put, py, startRun, waitHealth } from '../support/run.ts';

/*
 * health --config reads each target and then what plan says the file's
 * definitions do to it (withPlannedChanges): a definition refused, or a
 * held projection built from another definition than the file's. /healthz
 * read the target only, so the two views of the same file and state
 * disagreed: here the user's own table `open_issues` in cache.db keeps the
 * declared map from being built (TARGET_TABLE_EXISTS), health --config said
 * the file's definition is refused and /healthz did not. Both now apply the
 * same rule; once the table is gone, run builds the map and both are green
 * again (the plan /healthz reads is not left stale).
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

const REFUSED = /the file's definition of projection open_issues is refused \(TARGET_TABLE_EXISTS\)/;

describe.skipIf(process.platform === 'win32')('sluice run /healthz and health --config', () => {
  test('agree on a declared projection the plan refuses, and on the target once it is fixed', async ({ tmp }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src, 10);
    // The user's own table, in the file the pipeline declares as its target.
    py(tgt, `con.execute("CREATE TABLE open_issues (note TEXT)")`);
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues, comments]
    targets:
      - path: cache.db
        projections: ["*", {name: open_issues, source: issues, kind: map, columns: {id: id, title: title}, filter: "state = 'open'"}]
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config);
    const failing = await waitHealth(port, 'the refused build reported', (h) =>
      h.status.targets.some((t) => t.projections.some((p) => p.name === 'open_issues' && p.failure !== null)),
    );
    expect(failing.code).toBe(503);

    const cli = await runCliAsync(['health', '--config', config, '--json']);
    expect(cli.status).toBe(3);
    const byCli = parseJson(cli, pipelineHealthOutput);
    const planned = byCli.problems.filter((p) => REFUSED.test(p));
    expect(planned, 'health --config says what plan says').toHaveLength(1);
    // Never built: the target does not hold it "as built before".
    expect(planned[0]).not.toMatch(/as built before/);

    // (/healthz reads the plan in the background, again once a part's state changed: it says so within moments.)
    const served = await waitHealth(port, '/healthz to say what health --config says', (h) => h.status.problems.includes(planned[0] ?? ''));
    expect(served.code).toBe(503);
    const judged = (h: typeof byCli) =>
      h.targets.map((t) => ({
        path: t.path,
        ok: t.ok,
        projections: t.projections.map((p) => ({ name: p.name, needsAction: p.needsAction, action: p.action })),
      }));
    expect(judged(served.status)).toEqual(judged(byCli));

    // The user's table goes; the app's next write makes run try the build again, which now succeeds.
    py(tgt, `con.execute("DROP TABLE open_issues")`);
    py(src, `con.execute("INSERT INTO issues VALUES (1001, 'one more', 'open')")`);
    await waitHealth(port, 'the map built and /healthz green', (h) => h.code === 200, 20_000);
    expect((await runCliAsync(['health', '--config', config])).status).toBe(0);
  }, 90_000);
});
