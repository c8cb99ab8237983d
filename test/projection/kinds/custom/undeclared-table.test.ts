// a handler that uses a name ctx.tables does not hold is refused naming the projection, the name and the fix
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { runCliAsync, trackerSource, dumpTables } from '../../../cli/support/cli.ts';
import { handlerTables } from '../../../../src/projection/index.ts';

/*
 * ctx.tables holds the names of the tables a custom definition declares in
 * "tables". A name it does not declare used to read as undefined: it
 * reached Kysely as a table name and failed with "Cannot read properties of
 * undefined (reading 'includes')", naming neither the projection nor the
 * table. Now it is refused where it is used, CUSTOM_TABLE_UNDECLARED, with
 * the name, what the definition declares and the fix; nothing is committed.
 */

function handler(dir: string, table: string): string {
  fs.writeFileSync(
    path.join(dir, 'titles.mjs'),
    `export default {
  version: '1',
  async init(rows, { db, tables }) {
    await db.schema.createTable(tables.${table}).ifNotExists().addColumn('id', 'integer', (c) => c.primaryKey()).execute();
    for (const r of rows) await db.insertInto(tables.${table}).values({ id: Number(r.repo_id) * 1000 + Number(r.number) }).execute();
  },
  apply() {},
};
`,
  );
  return path.join(dir, 'titles.mjs');
}

function definition(dir: string, tables: readonly string[] | undefined): string {
  const def = path.join(dir, 'titles.json');
  fs.writeFileSync(
    def,
    JSON.stringify({
      name: 'titles',
      source: 'issues',
      kind: 'custom',
      module: './titles.mjs',
      ...(tables === undefined ? {} : { tables }),
    }),
  );
  return def;
}

describe('ctx.tables in a custom handler', () => {
  test('a name the definition does not declare fails the build with CUSTOM_TABLE_UNDECLARED, naming it and the fix; nothing is built', async ({
    tmp,
  }) => {
    const src = trackerSource(path.join(tmp, 'app.db'), ['issues']);
    const tgt = path.join(tmp, 'cache.db');
    handler(tmp, 'title_rows');
    const r = await runCliAsync(['sync', src, tgt, '--projection', definition(tmp, ['titles'])]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain('CUSTOM_TABLE_UNDECLARED');
    expect(r.stderr).toContain('custom projection titles failed');
    expect(r.stderr).toContain('after reading ctx.tables.title_rows, which the definition does not declare');
    expect(r.stderr).toContain('declares "tables": ["titles"]');
    expect(r.stderr).toContain('Add "title_rows" to the definition\'s "tables"');
    expect(Object.keys(dumpTables(tgt)).filter((t) => !t.startsWith('_sluice'))).toEqual([]);
  });

  test('a name declared with other letter cases is pointed at as declared; declared as used, the build works', async ({ tmp }) => {
    const src = trackerSource(path.join(tmp, 'app.db'), ['issues']);
    const tgt = path.join(tmp, 'cache.db');
    handler(tmp, 'titles');
    const r = await runCliAsync(['sync', src, tgt, '--projection', definition(tmp, ['Titles'])]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain('CUSTOM_TABLE_UNDECLARED');
    expect(r.stderr).toContain('Use ctx.tables.Titles');
    const ok = await runCliAsync(['sync', src, tgt, '--projection', definition(tmp, ['titles'])]);
    expect(ok.status, ok.stderr).toBe(0);
    expect(dumpTables(tgt, ['titles']).titles?.length).toBe(200);
  });

  test('ctx.tables is a plain object of the declared names; a name read that it does not hold is named only when the handler then fails', () => {
    const { tables: t, failure } = handlerTables({ name: 'p', tables: ['a', 'b'] }, 'p');
    expect({ ...t }).toEqual({ a: 'a', b: 'b' });
    expect(structuredClone(t)).toEqual({ a: 'a', b: 'b' });
    expect(JSON.stringify(t)).toBe('{"a":"a","b":"b"}');
    expect((t as { then?: unknown }).then).toBeUndefined();
    expect(handlerTables({ name: 'p', tables: ['a'] }, 'p__shadow1').tables.a).toBe('p__shadow1__a');
    const boom = new Error('boom');
    expect(failure(boom)).toBe(boom); // nothing undeclared read yet
    expect((t as Record<string, string | undefined>).c).toBeUndefined();
    const named = failure(boom) as Error & { code?: string };
    expect(named.code).toBe('CUSTOM_TABLE_UNDECLARED');
    expect(named.message).toContain('failed (boom) after reading ctx.tables.c');
    expect(named.cause).toBe(boom);
  });
});
