// sluice run takes up a handler module fixed after it failed to load
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { runCli, scalar, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, put, startRun, waitHealth } from '../support/run.ts';

/*
 * Isolation is the rule (issue 21): a custom handler module that fails to
 * import (a syntax error, a throw at load) is recorded as the failure of
 * its target, with its reason and the fix, in /healthz and in
 * `health --config`, while every other target runs; it is not a pipeline
 * file that fails to load. Once the module is fixed (saved: run watches
 * the modules the file names, or SIGHUP), the target is built, without a
 * restart: a module that failed to import is imported afresh, not
 * answered from the import that failed.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

const targetPart = (
  h: { status: { run: { parts: readonly { kind: string; name: string; failure: { code: string; message: string } | null }[] } } },
  file: string,
) => h.status.run.parts.find((p) => p.kind === 'target' && p.name.endsWith(file));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('starts with a handler module that fails to import: its target is recorded as failed with the fix, the others run, and it is built once the module is saved fixed', async ({
    tmp,
  }) => {
    appSource(path.join(tmp, 'app.db'));
    const config = path.join(tmp, 'sluice.yml');
    const handler = path.join(tmp, 'hooked.mjs');
    put(handler, `export default { version: '1', async init( {} };\n`); // a syntax error
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues]
    targets:
      - path: cache.db
        projections: ["*"]
      - path: hooked.db
        projections: [{name: hooked, source: issues, kind: custom, module: ./hooked.mjs, tables: [hooked_ids]}]
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config);
    const broken = await waitHealth(port, 'the module failure recorded', (h) => targetPart(h, 'hooked.db')?.failure != null);
    expect(broken.code).toBe(503);
    expect(broken.status.run.configError).toBeNull();
    const failure = targetPart(broken, 'hooked.db')?.failure;
    expect(failure?.code).toBe('CUSTOM_MODULE_FAILED');
    expect(failure?.message).toContain('hooked.mjs');
    expect(failure?.message).toMatch(/Fix the module/);
    expect(broken.status.problems.some((p) => p.includes('hooked.mjs') && p.includes('CUSTOM_MODULE_FAILED'))).toBe(true);
    // The other target is built and followed meanwhile.
    const other = await waitHealth(
      port,
      'cache.db built',
      (h) => targetPart(h, 'cache.db')?.failure === null && h.status.targets.some((t) => t.path.endsWith('cache.db') && t.ok),
    );
    expect(other.code).toBe(503);
    expect(scalar(path.join(tmp, 'cache.db'), 'SELECT count(*) FROM issues')).toBe(50n);

    // health --config says the same, without a run.
    const h = runCli(['health', '--config', config]);
    expect(h.status).toBe(3);
    expect(h.stdout).toMatch(/hooked.*hooked\.mjs.*failed to load/);

    put(
      handler,
      `export default {
  version: '1',
  async init(rows, { db, tables }) {
    await db.schema.createTable(tables.hooked_ids).ifNotExists().addColumn('id', 'integer', (c) => c.primaryKey()).execute();
    for (const r of rows) await db.insertInto(tables.hooked_ids).values({ id: r.id }).execute();
  },
  async apply(e, { db, tables }) {
    if (e.before !== null) await db.deleteFrom(tables.hooked_ids).where('id', '=', e.before.id).execute();
    if (e.after !== null) await db.insertInto(tables.hooked_ids).values({ id: e.after.id }).execute();
  },
};
`,
    );
    await waitHealth(port, 'the fixed module taken up', (h) => h.code === 200, 30_000);
    expect(scalar(path.join(tmp, 'hooked.db'), 'SELECT count(*) FROM hooked_ids')).toBe(50n);
  }, 90_000);

  test('takes up a handler module added broken on a reload, recorded as its target failing (not the file), and fixed without a restart', async ({
    tmp,
  }) => {
    appSource(path.join(tmp, 'app.db'));
    const config = path.join(tmp, 'sluice.yml');
    const port = await freePort();
    const file = (extra: string) =>
      put(
        config,
        `sources:
  - path: app.db
    capture: [issues]
    targets:
      - path: cache.db
        projections: ["*"${extra}]
listen: 127.0.0.1:${port}
`,
      );
    file('');
    running = startRun(config);
    await waitHealth(port, 'the first build', (h) => h.code === 200);

    const handler = path.join(tmp, 'hooked.mjs');
    put(handler, `throw new Error('not written yet');\n`);
    file(', {name: hooked, source: issues, kind: custom, module: ./hooked.mjs}');
    const broken = await waitHealth(port, 'the module failure noticed', (h) => targetPart(h, 'cache.db')?.failure != null);
    expect(broken.code).toBe(503);
    expect(broken.status.run.configError).toBeNull();
    expect(targetPart(broken, 'cache.db')?.failure?.code).toBe('CUSTOM_MODULE_FAILED');
    expect(targetPart(broken, 'cache.db')?.failure?.message).toContain('not written yet');

    put(handler, `export default { version: '1', async init() {}, async apply() {} };\n`);
    running.child.kill('SIGHUP');
    const fixed = await waitHealth(
      port,
      'the fixed module taken up',
      (h) => h.code === 200 && h.status.targets[0]?.projections.some((p) => p.name === 'hooked') === true,
      30_000,
    );
    expect(fixed.status.run.configError).toBeNull();
  }, 90_000);
});
