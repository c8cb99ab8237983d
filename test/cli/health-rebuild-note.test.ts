// health does not say the next sync rebuilds a projection by itself while every sync of it fails
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { cli, makeSource } from '../apply/support/target.ts';

/*
 * After `sluice alter ... ADD COLUMN`, a custom projection that declares no
 * tables is refused by every sync (ALTER_CUSTOM_NO_SHADOW, until sluice
 * reinit), yet health printed ".. the next sluice sync rebuilds it by
 * itself (SCHEMA_CHANGED)". The note is for a projection sync does rebuild.
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
});
