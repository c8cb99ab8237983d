// health --config asks the sluice run that holds the file what only it knows: a stalled pass, a part not running
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { parseJson, runCliAsync, scalar, type Spawned } from '../../cli/support/cli.ts';
import { pipelineHealthOutput } from '../../../src/cli/index.ts';
import { appSource, freePort, kill, put, py, startRun, waitForRun, waitHealth } from '../support/run.ts';

/*
 * A pass that commits nothing for longer than health: {maxPassMs} (a custom
 * handler whose apply never settles) is known to the run process only: the
 * files look fine, only behind. /healthz said "stalled" (503) while
 * `sluice health --config` on the same file, from another process, exited
 * 0. It now asks the run that holds the file's lock, at the file's
 * `listen`, and says what its parts say; a run that holds the file and does
 * not answer there (here: stopped with SIGSTOP) needs action too. Without
 * `listen` there is nothing to ask: health --config says so, naming the
 * process, and judges the files alone.
 */

let running: Spawned | undefined;
afterEach(() => {
  running?.child.kill('SIGCONT');
  kill(running);
});

const STALLED = /target \S*cache\.db: stalled: its pass has committed nothing for \d+ s \(past 3000 ms, health: maxPassMs\)/;

describe.skipIf(process.platform === 'win32')('sluice health --config beside a sluice run', () => {
  test('names a pass of the run that is stalled, and a run that does not answer its /healthz', async ({ tmp }) => {
    const src = path.join(tmp, 'app.db');
    const config = path.join(tmp, 'sluice.yml');
    py(
      src,
      `con.execute("PRAGMA journal_mode = wal")\ncon.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")\ncon.execute("INSERT INTO items VALUES (1, 'a')")`,
    );
    put(
      path.join(tmp, 'h.mjs'),
      `export default {
  version: '1',
  async init(rows, { db, tables }) {
    await db.schema.createTable(tables.h).ifNotExists().addColumn('id', 'integer', (c) => c.primaryKey()).execute();
    for (const r of rows) await db.insertInto(tables.h).values({ id: r.id }).execute();
  },
  async apply(e, { db, tables }) {
    if (e.after && e.after.name === 'hang') await new Promise(() => {});
    if (e.after) await db.insertInto(tables.h).values({ id: e.after.id }).onConflict((oc) => oc.doNothing()).execute();
  },
};
`,
    );
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [items]
    targets:
      - path: cache.db
        projections: [{name: h, source: items, kind: custom, module: ./h.mjs, tables: [h]}]
        health: {maxPassMs: 3000}
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config, { SLUICE_STOP_GRACE_MS: '1000' });
    const run = running;
    await waitHealth(port, 'the first build', (h) => h.code === 200);
    const fine = await runCliAsync(['health', '--config', config, '--json']);
    expect(fine.status, fine.stdout).toBe(0);
    expect(parseJson(fine, pipelineHealthOutput).running).toEqual({
      pid: run.child.pid,
      healthz: `http://127.0.0.1:${port}/healthz`,
      parts: expect.any(Array) as unknown,
      problems: [],
    });

    py(src, `con.execute("INSERT INTO items VALUES (2, 'hang')")`);
    const stalled = await waitHealth(port, 'the stalled pass reported', (h) => h.code === 503, 20_000);
    expect(stalled.status.problems.join('\n')).toMatch(STALLED);

    const json = await runCliAsync(['health', '--config', config, '--json']);
    expect(json.status, 'health --config exits 3 as /healthz answers 503').toBe(3);
    const h = parseJson(json, pipelineHealthOutput);
    expect(h.ok).toBe(false);
    expect(h.problems.join('\n')).toMatch(STALLED);
    expect(h.running?.problems.join('\n')).toMatch(STALLED);
    expect(h.running?.parts?.find((p) => p.kind === 'target')?.stalled?.boundMs).toBe(3000);
    const text = await runCliAsync(['health', '--config', config]);
    expect(text.status).toBe(3);
    expect(text.stdout).toMatch(
      new RegExp(`!! run pid ${run.child.pid} \\(http://127\\.0\\.0\\.1:${port}/healthz\\)\\n +-> ${STALLED.source}`),
    );

    // The process holds the file and answers nothing (stopped, or its main thread wedged): not "ok".
    run.child.kill('SIGSTOP');
    const silent = await runCliAsync(['health', '--config', config, '--json']);
    run.child.kill('SIGCONT');
    expect(silent.status).toBe(3);
    expect(parseJson(silent, pipelineHealthOutput).problems.join('\n')).toMatch(
      new RegExp(
        `sluice run \\(pid ${run.child.pid}\\) holds .*sluice\\.yml, and its /healthz at http://127\\.0\\.0\\.1:${port}/healthz did not answer`,
      ),
    );
  }, 90_000);

  test('without listen, says that a run holds the file and what it cannot read of it', async ({ tmp }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src, 5);
    put(config, `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - path: cache.db\n        projections: ["*"]\n`);
    running = startRun(config);
    const run = running;
    await waitForRun(run, 'the first build', () => scalar(tgt, 'SELECT count(*) FROM issues') === 5n);
    const text = await runCliAsync(['health', '--config', config]);
    expect(text.status, text.stdout).toBe(0);
    expect(text.stdout).toMatch(
      new RegExp(`\\.\\. run pid ${run.child.pid}: .*sluice\\.yml declares no listen, so what only that process knows \\(a stalled pass`),
    );
    const h = parseJson(await runCliAsync(['health', '--config', config, '--json']), pipelineHealthOutput);
    expect(h.running).toMatchObject({ pid: run.child.pid, healthz: null, parts: null, problems: [] });
  }, 60_000);
});
