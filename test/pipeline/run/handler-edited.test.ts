// sluice run takes in a handler module edited while it runs
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { scalar, type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, put, py, startRun, waitFor, waitHealth } from '../support/run.ts';

/*
 * A custom projection's handler module is part of its definition: a new
 * version of it saved while run runs is taken in as a changed definition
 * file is (the target's worker starts again and imports it afresh, and
 * sync rebuilds the projection, which declares its tables, beside the live
 * one for its new version), not left running the old code until a restart.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

const handler = (v: string) =>
  `export default {
  version: '${v}',
  async init(_rows, { db, tables }) {
    await db.schema.createTable(tables.seen).ifNotExists().addColumn('v', 'text').execute();
  },
  async apply(_event, { db, tables }) {
    await db.insertInto(tables.seen).values({ v: '${v}' }).execute();
  },
};
`;

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('takes in a handler module edited while it runs: the new version applies the next writes', async ({ tmp }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    appSource(src);
    put(path.join(tmp, 'handler.mjs'), handler('1'));
    const config = path.join(tmp, 'sluice.yml');
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues]
    targets:
      - path: cache.db
        projections: ["*", {name: hooked, source: issues, kind: custom, module: ./handler.mjs, tables: [seen]}]
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config);
    await waitHealth(port, 'the first build', (h) => h.code === 200);
    py(src, `con.execute("UPDATE issues SET title = 'one' WHERE id = 1")`);
    await waitFor('version 1 applied', () => scalar(tgt, "SELECT count(*) FROM seen WHERE v = '1'") === 1n);

    put(path.join(tmp, 'handler.mjs'), handler('2'));
    await waitFor('the rebuild for version 2', () => scalar(tgt, "SELECT count(*) FROM seen WHERE v = '1'") === 0n, 20_000);
    py(src, `con.execute("UPDATE issues SET title = 'two' WHERE id = 2")`);
    await waitFor('version 2 applied', () => scalar(tgt, "SELECT count(*) FROM seen WHERE v = '2'") === 1n);
    expect(scalar(tgt, 'SELECT count(*) FROM seen')).toBe(1n);
  }, 60_000);
});
