// a custom handler whose raw sql lands in the source fails its batch and the source keeps its schema
import path from 'node:path';
import { sql } from 'kysely';
import { test, expect } from '../../../support/fixtures.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import type { CustomHandler } from '../../../../src/projection/index.ts';

/*
 * In a sync the source is the connection's main database and the target is
 * attached beside it, so a handler's raw SQL with an unqualified table name
 * runs on the source: a surprise write to the user's database. sluice
 * checks the source's schema around every call into a handler, fails the
 * batch with CUSTOM_WROTE_SOURCE, and the rollback takes the source's
 * change with it. The builders of ctx.db resolve names in the target.
 */

test("a custom handler whose raw SQL creates a table in the source fails its batch with CUSTOM_WROTE_SOURCE, the source's schema and the target are unchanged", async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb('app.db', "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'a')");
  enable(db, ['notes']);
  const schemaOf = () => db.prepare("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema ORDER BY name)").pluck().get();
  const before = schemaOf();
  const careless: CustomHandler = {
    version: '1',
    async init(_rows, ctx) {
      await sql`CREATE TABLE IF NOT EXISTS counts (n INTEGER)`.execute(ctx.db);
    },
    async apply() {},
  };
  const target = path.join(tmp, 'cache.db');
  const r = await sync(file, target, { projections: [{ name: 'counts', source: 'notes', kind: 'custom', handler: careless }] });
  expect(r.projections[0]?.error?.code).toBe('CUSTOM_WROTE_SOURCE');
  expect(r.projections[0]?.error?.message).toContain('custom projection counts');
  expect(r.projections[0]?.error?.message).toContain("ctx.db's query and schema builders");
  expect(schemaOf()).toBe(before);
  const t = openDatabase(target, { readonly: true });
  expect(t.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'counts'").pluck().get()).toBe(0n);
  t.close();

  // The same handler through the builders: its table is in the target, and the source is untouched.
  const careful: CustomHandler = {
    version: '1',
    async init(_rows, ctx) {
      await ctx.db.schema.createTable('counts').ifNotExists().addColumn('n', 'integer').execute();
    },
    async apply() {},
  };
  const ok = await sync(file, target, { projections: [{ name: 'counts', source: 'notes', kind: 'custom', handler: careful }] });
  expect(ok.projections[0]?.error).toBeUndefined();
  expect(schemaOf()).toBe(before);
});
