// health is green for a custom projection whose handler has not made its declared tables yet
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { health } from '../../../src/apply/check/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import type { CustomHandler } from '../../../src/projection/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * A custom handler makes the tables its definition declares when it
 * chooses (say, at its first event), not sluice: a declared table that is
 * not there yet is not a table dropped by hand. Health, which says so of a
 * mirror's, map's or fts5 index's missing table, stays green for it; and
 * it reads the table once the handler made it.
 */

test('health is green for a custom projection whose handler has not made its declared table yet, and the table comes with the first event', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)', ['t']);
  const lazy: CustomHandler = {
    version: '1',
    async init(rows) {
      for (const _ of rows) throw new Error('an empty source has no rows');
    },
    async apply(e, ctx) {
      const t = ctx.tables.log as string;
      await ctx.db.schema.createTable(t).ifNotExists().addColumn('id', 'integer').execute();
      await ctx.db.insertInto(t).values({ id: e.key[0] }).execute();
    },
  };
  const target = path.join(tmp, 'cache.db');
  const defs = [{ name: 'log', source: 't', kind: 'custom' as const, tables: ['log'], handler: lazy }];
  expect((await sync(src.file, target, { projections: defs })).projections[0]?.state).toBe('active');
  const h = health(target);
  expect(h.projections.map((p) => [p.name, p.needsAction, p.problems])).toEqual([['log', false, []]]);

  src.db.exec("INSERT INTO t VALUES (7, 'x')");
  await sync(src.file, target, { projections: defs });
  const t = openDatabase(target, { readonly: true });
  expect(t.prepare('SELECT id FROM log').pluck().all()).toEqual([7n]);
  t.close();
  expect(health(target).projections[0]?.needsAction).toBe(false);
});
