// health does not say the next sync rebuilds a projection by itself while every sync of it fails
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { cli, makeSource } from '../apply/support/target.ts';

/*
 * After `sluice alter ... ADD COLUMN`, a custom projection that declares no
 * tables is refused by every sync (ALTER_CUSTOM_NO_SHADOW, until sluice
 * reinit), yet health printed ".. the next sluice sync rebuilds it by
 * itself (SCHEMA_CHANGED)". The note is for a projection sync does rebuild.
 * Nor is a suspended projection rebuilt by itself: a map whose filter reads
 * a column another program renamed stays suspended (SOURCE_COLUMN_MISSING)
 * however often sync runs, where health promised the next sync rebuilt it.
 */

const HANDLER = `export default [{ name: 'cu', source: 'items', kind: 'custom',
  handler: { version: '1',
    async init(rows, { db }) {
      await db.schema.dropTable('cu_t').ifExists().execute();
      await db.schema.createTable('cu_t').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('name', 'text').execute();
      for (const r of rows) await db.insertInto('cu_t').values({ id: r.id, name: r.name }).execute();
    },
    async apply(e, { db }) {
      if (e.before) await db.deleteFrom('cu_t').where('id', '=', e.before.id).execute();
      if (e.after) await db.insertInto('cu_t').values({ id: e.after.id, name: e.after.name }).execute();
    } } }];
`;

describe('sluice health', () => {
  test('a projection every sync refuses after an alter is not said to be rebuilt by the next sync', ({ tmp, makeDb }) => {
    const src = makeSource(makeDb, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1, 'a');", ['items']);
    src.db.close();
    const tgt = path.join(tmp, 'cache.db');
    const def = path.join(tmp, 'cu.mjs');
    fs.writeFileSync(def, HANDLER);
    expect(cli(['sync', src.file, tgt, '--projection', def]).status).toBe(0);
    expect(cli(['alter', src.file, 'ALTER TABLE items ADD COLUMN z TEXT']).status).toBe(0);
    const refused = cli(['sync', src.file, tgt]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('ALTER_CUSTOM_NO_SHADOW');
    const h = cli(['health', tgt]);
    expect(h.status).toBe(3);
    expect(h.stdout).toContain('ALTER_CUSTOM_NO_SHADOW');
    expect(h.stdout).not.toMatch(/rebuilds it by itself/);
  });

  test('a projection suspended because its filter reads a renamed column is not said to be rebuilt by the next sync', ({ tmp, makeDb }) => {
    const src = makeSource(makeDb, "CREATE TABLE t (id INTEGER PRIMARY KEY, title TEXT, n INT); INSERT INTO t VALUES (1, 'a', 1);", ['t']);
    src.db.close();
    const tgt = path.join(tmp, 'cache.db');
    const def = path.join(tmp, 'm.json');
    fs.writeFileSync(def, JSON.stringify({ name: 'm', source: 't', kind: 'map', columns: { id: 'id', t: 'title' }, filter: 'n > 0' }));
    expect(cli(['sync', src.file, tgt, '--projection', def]).status).toBe(0);
    runSqliteCli(src.file, "ALTER TABLE t RENAME COLUMN n TO m; INSERT INTO t VALUES (2, 'b', 5);");
    for (let i = 0; i < 2; i++) expect(cli(['sync', src.file, tgt]).status).toBe(3);
    const h = cli(['health', tgt]);
    expect(h.status).toBe(3);
    expect(h.stdout).toMatch(/!! m \[map\] suspended SOURCE_COLUMN_MISSING/);
    expect(h.stdout).not.toMatch(/rebuilds it by itself/);
    expect(cli(['sync', src.file, tgt]).status).toBe(3);
  });
});
