// dropping a projection while it is rebuilt drops its shadow and staged copy too
import { SMALL_BUILD_CHUNK } from '../support/small-build-chunk.ts';
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import { cli, jsonOut, makeSource } from '../support/target.ts';
import { syncByLibrary } from '../../cli/support/cli.ts';

/*
 * `sluice drop` removes a projection and the tables it owns, and only
 * those. A projection killed midway through a protected rebuild also owns
 * the build's tables (its shadow and, for fts5 or a custom handler, the
 * staged copy of the source rows): they go with it, or they would stay in
 * the target for good, as big as the source table, with no row left to say
 * whose they are. The user's own tables stay.
 */

// Two whole chunks and a part of one, as with the real size (small-build-chunk.ts): 2,500 rows instead of 40,500.
const ROWS = BUILD_CHUNK * 2 + 500;
const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL, n INTEGER)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'word' || (i % 5) || ' row', i % 7 FROM c`;

/** A handler module with two declared tables: counts per n, and the ids seen. */
const HANDLER = (version: string) => `
const bump = (ctx, n, by) => ctx.db.insertInto(ctx.tables.counts).values({ n, c: by })
  .onConflict((oc) => oc.column('n').doUpdateSet((eb) => ({ c: eb('c', '+', by) }))).execute();
export default {
  version: '${version}',
  async init(rows, ctx) {
    await ctx.db.schema.createTable(ctx.tables.counts).ifNotExists().addColumn('n', 'integer', (c) => c.primaryKey()).addColumn('c', 'integer').execute();
    await ctx.db.schema.createTable(ctx.tables.seen).ifNotExists().addColumn('id', 'integer', (c) => c.primaryKey()).execute();
    for (const r of rows) { await bump(ctx, Number(r.n), 1); await ctx.db.insertInto(ctx.tables.seen).values({ id: r.id }).execute(); }
  },
  async apply(e, ctx) {
    if (e.before !== null) { await bump(ctx, Number(e.before.n), -1); await ctx.db.deleteFrom(ctx.tables.seen).where('id', '=', e.before.id).execute(); }
    if (e.after !== null) { await bump(ctx, Number(e.after.n), 1); await ctx.db.insertInto(ctx.tables.seen).values({ id: e.after.id }).execute(); }
  },
};
`;

const KINDS: Record<string, { def: (dir: string, v: string) => string; owns: string[] }> = {
  fts5: {
    def(dir, v) {
      const f = path.join(dir, `search-${v}.json`);
      fs.writeFileSync(
        f,
        JSON.stringify({
          name: 'p',
          source: 't',
          kind: 'fts5',
          columns: ['body'],
          content: 'external',
          tokenize: v === 'v1' ? 'unicode61' : 'porter',
        }),
      );
      return f;
    },
    owns: ['p', 'p_src'],
  },
  custom: {
    def(dir, v) {
      fs.writeFileSync(path.join(dir, `handler-${v}.mjs`), HANDLER(v));
      const f = path.join(dir, `counts-${v}.json`);
      fs.writeFileSync(
        f,
        JSON.stringify({ name: 'p', source: 't', kind: 'custom', tables: ['counts', 'seen'], module: `./handler-${v}.mjs` }),
      );
      return f;
    },
    owns: ['counts', 'seen'],
  },
  map: {
    def(dir, v) {
      const f = path.join(dir, `map-${v}.json`);
      fs.writeFileSync(
        f,
        JSON.stringify({ name: 'p', source: 't', kind: 'map', columns: { id: 'id', body: 'body', ...(v === 'v1' ? {} : { n: 'n' }) } }),
      );
      return f;
    },
    owns: ['p'],
  },
};

function tablesIn(target: string): string[] {
  const db = openDatabase(target, { readonly: true });
  try {
    return db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
      .pluck()
      .all() as string[];
  } finally {
    db.close();
  }
}

describe('sluice drop of a projection killed midway through a protected rebuild', () => {
  test.for(Object.keys(KINDS))('%s: drops its tables, its shadow and its staged copy, and nothing else', async (kind, { makeDb, tmp }) => {
    expect(BUILD_CHUNK, 'small-build-chunk.ts is imported before src/').toBe(SMALL_BUILD_CHUNK);
    const k = KINDS[kind] as (typeof KINDS)[string];
    const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
    const target = path.join(tmp, 'cache.db');
    const user = openDatabase(target, { create: true });
    user.exec('CREATE TABLE mine (x); CREATE TABLE counts_mine (y)');
    user.close();
    // The first build through the library (what the CLI runs): the runs killed and the drop are the CLI's.
    expect(await syncByLibrary(src.file, target, [k.def(tmp, 'v1')])).toBe(0);
    // Two steps of the rebuild, each killed right after it committed.
    for (let i = 0; i < 2; i++)
      expect(cli(['sync', src.file, target, '--projection', k.def(tmp, 'v2')], { SLUICE_CRASH_AT: 'build-step' }).signal).toBe('SIGKILL');
    const building = tablesIn(target).filter((t) => t.startsWith('_sluice_build_'));
    expect(building.length).toBeGreaterThanOrEqual(1);
    const dropped = cli(['drop', target, 'p', '--json']);
    expect(dropped.status, dropped.stderr).toBe(0);
    // Its own tables and the build's (an FTS5 index's own tables go with it).
    const names = jsonOut<{ dropped: string[] }>(dropped).dropped;
    expect(names.filter((t) => !t.startsWith('_sluice_build_')).sort()).toEqual([...k.owns].sort());
    expect(names.filter((t) => t.startsWith('_sluice_build_')).length).toBeGreaterThanOrEqual(1);
    expect(tablesIn(target)).toEqual([
      '_sluice_dropped',
      '_sluice_projection_set',
      '_sluice_projections',
      '_sluice_target',
      'counts_mine',
      'mine',
    ]);
  });
});
