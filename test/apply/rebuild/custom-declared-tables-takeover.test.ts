// a custom projection that comes to declare the tables its handler made takes them over in a protected rebuild
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { CustomHandler, ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * A custom handler written before "tables" existed makes its table itself
 * (projections/comment-counts.ts did). When its definition comes to declare
 * that table, the table is the projection's own: the next sync rebuilds it
 * beside it and swaps it in, as for any declared table, and does not refuse
 * it as a table someone else made (TARGET_TABLE_EXISTS). A view over it
 * keeps working. Another projection's table can still not be declared.
 */

const ROWS = BUILD_CHUNK + 100;

/**
 * Counts rows per n. Undeclared (`table` given), init gets every row at once and replaces its table; declared,
 * it gets the rows in parts and adds each (the contract of a handler that declares its tables).
 */
function counter(version: string, table?: string): CustomHandler {
  return {
    version,
    async init(rows, ctx) {
      const t = table ?? (ctx.tables.counts as string);
      if (table !== undefined) await ctx.db.schema.dropTable(t).ifExists().execute();
      await ctx.db.schema
        .createTable(t)
        .ifNotExists()
        .addColumn('n', 'integer', (c) => c.primaryKey())
        .addColumn('c', 'integer')
        .execute();
      const by = new Map<number, number>();
      for (const r of rows) by.set(Number(r.n), (by.get(Number(r.n)) ?? 0) + 1);
      for (const [n, c] of by)
        await ctx.db
          .insertInto(t)
          .values({ n, c })
          .onConflict((oc) => oc.column('n').doUpdateSet((eb) => ({ c: eb('c', '+', c) })))
          .execute();
    },
    async apply() {},
  };
}

test('a custom projection whose definition comes to declare the table its handler made takes it over in a protected rebuild, and a view over it keeps working', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, 'CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER)', ['t'], {
    seed: `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, i % 5 FROM c`,
  });
  const target = path.join(tmp, 'cache.db');
  const before: ProjectionDefinition = { name: 'per_n', source: 't', kind: 'custom', handler: counter('1', 'counts') };
  await sync(src.file, target, { projections: [before] });
  const user = openDatabase(target);
  user.exec('CREATE VIEW busiest AS SELECT n FROM counts ORDER BY c DESC, n LIMIT 1');
  user.close();

  const declared: ProjectionDefinition = { name: 'per_n', source: 't', kind: 'custom', tables: ['counts'], handler: counter('1') };
  const r = await sync(src.file, target, { projections: [declared] });
  expect(r.projections[0], JSON.stringify(r.projections[0])).toMatchObject({ state: 'active', swapped: true });
  const t = openDatabase(target, { readonly: true });
  try {
    expect(t.prepare('SELECT sum(c) FROM counts').pluck().get()).toBe(BigInt(ROWS));
    expect(t.prepare('SELECT n FROM busiest').pluck().get()).toBe(0n);
    expect(t.prepare("SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_sluice\\_build\\_%' ESCAPE '\\'").pluck().get()).toBe(0n);
  } finally {
    t.close();
  }
  // Another projection cannot take it by declaring it: refused before anything is written.
  const thief: ProjectionDefinition = { name: 'other', source: 't', kind: 'custom', tables: ['counts'], handler: counter('1') };
  await expect(sync(src.file, target, { projections: [declared, thief] })).rejects.toMatchObject({
    message: expect.stringContaining('counts'),
  });
  const after = openDatabase(target, { readonly: true });
  try {
    expect(after.prepare('SELECT sum(c) FROM counts').pluck().get()).toBe(BigInt(ROWS));
    expect(after.prepare("SELECT count(*) FROM _sluice_projections WHERE name = 'other'").pluck().get()).toBe(0n);
  } finally {
    after.close();
  }
});
