// a handler that hands ctx.tables on whole (to a worker thread, to a helper that probes it) still works
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { runCliAsync, trackerSource, dumpTables } from '../../../cli/support/cli.ts';

/*
 * ctx.tables became a Proxy that throws CUSTOM_TABLE_UNDECLARED for a name
 * the definition does not declare (tables.ts handlerTables). It used to be
 * a plain object, and handlers may hand it on whole: to a worker thread or
 * a MessagePort (postMessage clones it: a Proxy cannot be cloned), or to a
 * helper that looks for what an object is before using it (an array-like
 * check reads `length`, as lodash's forEach/map/size/isEmpty do). Neither
 * uses an undeclared table; both now fail the batch.
 */

function project(dir: string, body: string): string {
  fs.writeFileSync(
    path.join(dir, 'titles.mjs'),
    `export default {
  version: '1',
  async init(rows, { db, tables }) {
${body}
    await db.schema.createTable(tables.titles).ifNotExists().addColumn('id', 'integer', (c) => c.primaryKey()).execute();
    for (const r of rows) await db.insertInto(tables.titles).values({ id: Number(r.repo_id) * 1000 + Number(r.number) }).execute();
  },
  apply() {},
};
`,
  );
  const def = path.join(dir, 'titles.json');
  fs.writeFileSync(def, JSON.stringify({ name: 'titles', source: 'issues', kind: 'custom', module: './titles.mjs', tables: ['titles'] }));
  return def;
}

describe('ctx.tables handed on whole', () => {
  test('posted to a MessagePort (as to a worker thread), it is cloned as the plain object it was', async ({ tmp }) => {
    const src = trackerSource(path.join(tmp, 'app.db'), ['issues']);
    const tgt = path.join(tmp, 'cache.db');
    const def = project(
      tmp,
      `    const { port1, port2 } = new MessageChannel();
    port1.postMessage({ tables });
    port1.close(); port2.close();`,
    );
    const r = await runCliAsync(['sync', src, tgt, '--projection', def]);
    expect(r.status, r.stderr).toBe(0);
    expect(dumpTables(tgt, ['titles']).titles?.length).toBe(200);
  });

  test("given to a helper that checks whether it is array-like (reads its length, as lodash's isArrayLike does), it reads as an object", async ({
    tmp,
  }) => {
    const src = trackerSource(path.join(tmp, 'app.db'), ['issues']);
    const tgt = path.join(tmp, 'cache.db');
    const def = project(
      tmp,
      `    const isArrayLike = (v) => v != null && typeof v !== 'function' && Number.isInteger(v.length) && v.length >= 0;
    const names = isArrayLike(tables) ? Array.from(tables) : Object.values(tables);
    if (names.length !== 1) throw new Error('expected one table');`,
    );
    const r = await runCliAsync(['sync', src, tgt, '--projection', def]);
    expect(r.status, r.stderr).toBe(0);
    expect(dumpTables(tgt, ['titles']).titles?.length).toBe(200);
  });
});
