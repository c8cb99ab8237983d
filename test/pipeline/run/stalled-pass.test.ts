// sluice run says a target whose pass never ends is stalled (/healthz 503), naming it and for how long
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import type { Spawned } from '../../cli/support/cli.ts';
import { freePort, healthz, kill, put, py, startRun, waitHealth } from '../support/run.ts';

/*
 * A custom handler whose apply awaits a promise that never settles keeps
 * its target's pass in flight forever. The target used to stay "running"
 * and /healthz 200 while it fell behind (without lag bounds nothing else
 * notices). A pass that commits nothing for longer than its bound
 * (health: maxPassMs, default 30 s; 5 s here) is now stalled: /healthz 503, the part's
 * `stalled`, and a problem naming the target.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a pass that never ends makes /healthz 503 past the default bound, naming the target', async ({ tmp }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
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
      path.join(tmp, 'sluice.yml'),
      `sources:
  - path: app.db
    capture: [items]
    targets:
      - path: cache.db
        projections: [{name: h, source: items, kind: custom, module: ./h.mjs, tables: [h]}]
        health: {maxPassMs: 5000}
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(path.join(tmp, 'sluice.yml'), { SLUICE_STOP_GRACE_MS: '1000' });
    await waitHealth(port, 'the first build', (h) => h.code === 200);
    py(src, `con.execute("INSERT INTO items VALUES (2, 'hang')")`);
    const hungMs = Date.now();
    // Within the bound, it is not stalled yet.
    await new Promise((r) => setTimeout(r, 2000));
    // (Asked only while well inside the bound: a loaded machine can delay the timer past it.)
    if (Date.now() - hungMs < 3500) expect((await healthz(port)).code).toBe(200);
    const h = await waitHealth(port, 'the stalled pass reported', (x) => x.code === 503, 15_000);
    expect(Date.now() - hungMs).toBeGreaterThan(4000); // (the bound counts from the pass, which starts before py returns)
    const part = h.status.run.parts.find((p) => p.kind === 'target');
    expect(part).toMatchObject({ name: tgt, state: 'running', phase: 'following', stalled: { boundMs: 5000 } });
    expect(h.status.problems.join('\n')).toMatch(new RegExp(`target ${tgt}: stalled: its pass has committed nothing for \\d+ s`));
  }, 90_000);
});
