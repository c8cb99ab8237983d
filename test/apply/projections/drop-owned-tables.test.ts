// drop removes a projection with only the tables it owns and the others keep syncing
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { dropProjection } from '../../../src/apply/projections/index.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import type { CustomHandler, ProjectionDefinitionInput } from '../../../src/projection/index.ts';

const SCHEMA = `
CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT, body TEXT);
INSERT INTO notes VALUES (1, 'first', 'alpha beta'), (2, 'second', 'gamma');`;

/** A custom handler that keeps its own table in the target: the user's, not the projection's. */
const handler: CustomHandler = {
  version: '1',
  async init(rows, { db }) {
    await db.schema.createTable('note_log').ifNotExists().addColumn('id', 'integer').execute();
    for (const r of rows) await db.insertInto('note_log').values({ id: r.id }).execute();
  },
  async apply(event, { db }) {
    await db.insertInto('note_log').values({ id: event.key[0] }).execute();
  },
};

const DEFS: ProjectionDefinitionInput[] = [
  { name: 'notes', source: 'notes', kind: 'mirror' },
  { name: 'titles', source: 'notes', kind: 'map', columns: { id: 'id', title: 'title' } },
  { name: 'notes_fts', source: 'notes', kind: 'fts5', columns: ['title', 'body'], content: 'external' },
  { name: 'log', source: 'notes', kind: 'custom', handler },
];

/** The app's notes and a tags table, both captured, and where its target goes. */
function withTags(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, tmp: string): { file: string; target: string } {
  const { db, file } = makeDb('app.db', `${SCHEMA}; CREATE TABLE tags (id INTEGER PRIMARY KEY, t TEXT); INSERT INTO tags VALUES (1, 'x');`);
  enable(db, ['notes', 'tags']);
  return { file, target: path.join(tmp, 'cache.db') };
}

/** The target's tables, less FTS5's own shadow tables of the index (notes_fts_data, _idx, _docsize, _config). */
function tables(file: string): string[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT GLOB 'notes_fts_[dic]*' ORDER BY name")
      .pluck()
      .all() as string[];
  } finally {
    db.close();
  }
}

function scalar(file: string, sql: string): unknown {
  const db = openDatabase(file, { readonly: true });
  try {
    return db.prepare(sql).pluck().get();
  } finally {
    db.close();
  }
}

describe('sluice drop', () => {
  test("drops a mirror, an fts5 index (both its tables) and a custom projection (no table: its handler table is the user's), each alone; the rest keep syncing", async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    const target = path.join(tmp, 'cache.db');
    await sync(file, target, { projections: DEFS });
    const mine = openDatabase(target);
    mine.exec("CREATE TABLE my_notes (x); INSERT INTO my_notes VALUES ('mine')");
    mine.close();
    expect(tables(target)).toEqual([
      '_sluice_projection_set',
      '_sluice_projections',
      '_sluice_target',
      'my_notes',
      'note_log',
      'notes',
      'notes_fts',
      'notes_fts_src',
      'titles',
    ]);

    expect(dropProjection(target, 'notes_fts')).toEqual({ projection: 'notes_fts', dropped: ['notes_fts', 'notes_fts_src'] });
    expect(scalar(target, "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'notes_fts%'")).toBe(0n);
    expect(dropProjection(target, 'log')).toEqual({ projection: 'log', dropped: [] });
    expect(dropProjection(target, 'notes')).toEqual({ projection: 'notes', dropped: ['notes'] });
    expect(tables(target)).toEqual([
      '_sluice_dropped',
      '_sluice_projection_set',
      '_sluice_projections',
      '_sluice_target',
      'my_notes',
      'note_log',
      'titles',
    ]);
    expect(scalar(target, 'SELECT group_concat(name) FROM _sluice_projections')).toBe('titles');
    expect(scalar(target, 'SELECT x FROM my_notes')).toBe('mine');

    db.exec("UPDATE notes SET title = 'first, edited' WHERE id = 1; INSERT INTO notes VALUES (3, 'third', 'delta')");
    const r = await sync(file, target);
    expect(r.projections.map((p) => [p.name, p.state, p.rebuilt ?? null, p.applied])).toEqual([['titles', 'active', null, 2]]);
    const t = openDatabase(target, { readonly: true });
    expect(t.prepare('SELECT id, title FROM titles ORDER BY id').raw().all()).toEqual([
      [1n, 'first, edited'],
      [2n, 'second'],
      [3n, 'third'],
    ]);
    t.close();
  });

  test('drops the tables a custom definition declares, and only those: the table of another handler, not declared, stays', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    const target = path.join(tmp, 'cache.db');
    const declared: CustomHandler = {
      version: '1',
      async init(rows, ctx) {
        for (const t of [ctx.tables.ids as string, ctx.tables.titles as string])
          await ctx.db.schema.createTable(t).ifNotExists().addColumn('id', 'integer').execute();
        for (const r of rows)
          await ctx.db
            .insertInto(ctx.tables.ids as string)
            .values({ id: r.id })
            .execute();
      },
      async apply() {},
    };
    await sync(file, target, {
      projections: [
        DEFS[3] as ProjectionDefinitionInput,
        { name: 'owned', source: 'notes', kind: 'custom', tables: ['ids', 'titles'], handler: declared },
      ],
    });
    expect(tables(target)).toEqual(['_sluice_projection_set', '_sluice_projections', '_sluice_target', 'ids', 'note_log', 'titles']);
    expect(scalar(target, 'SELECT count(*) FROM ids')).toBe(2n);
    expect(dropProjection(target, 'owned')).toEqual({ projection: 'owned', dropped: ['ids', 'titles'] });
    expect(tables(target)).toEqual(['_sluice_dropped', '_sluice_projection_set', '_sluice_projections', '_sluice_target', 'note_log']);
  });

  test('drops a mirror the target\'s "*" made: the next plain sync does not make it again, and "*" given again takes it back', async ({
    makeDb,
    tmp,
  }) => {
    const { file, target } = withTags(makeDb, tmp);
    await sync(file, target);
    expect(dropProjection(target, 'tags')).toEqual({ projection: 'tags', dropped: ['tags'] });
    const plain = await sync(file, target);
    expect(plain.projections.map((p) => p.name)).toEqual(['notes']);
    expect(tables(target)).not.toContain('tags');
    const back = await sync(file, target, { projections: ['*'] });
    expect(back.projections.map((p) => [p.name, p.snapshotRows ?? null])).toEqual([
      ['notes', null],
      ['tags', 1],
    ]);
    expect((await sync(file, target)).projections.map((p) => p.name)).toEqual(['notes', 'tags']);
  });

  test('drops a mirror of a "*" added with --projection "*" to a target built from definitions: plain syncs after keep it dropped', async ({
    makeDb,
    tmp,
  }) => {
    const { file, target } = withTags(makeDb, tmp);
    await sync(file, target, { projections: [{ name: 'titles', source: 'notes', kind: 'map', columns: { id: 'id', title: 'title' } }] });
    await sync(file, target, { projections: ['*'] });
    expect(dropProjection(target, 'tags')).toEqual({ projection: 'tags', dropped: ['tags'] });
    // The "*" stored as given is read back by a plain sync: its list of dropped tables must stay (it was cleared).
    for (let i = 0; i < 2; i++) {
      const plain = await sync(file, target);
      expect(plain.projections.map((p) => p.name)).toEqual(['notes', 'titles']);
      expect(plain.unmirrored ?? []).toEqual([]);
    }
    expect(tables(target)).not.toContain('tags');
  });

  test('refuses a name the target does not have, listing the ones it has, and changes nothing', async ({ makeDb, tmp }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    const target = path.join(tmp, 'cache.db');
    await sync(file, target, { projections: DEFS.slice(0, 2) });
    const before = tables(target);
    expect(() => dropProjection(target, 'note')).toThrow(
      expect.objectContaining({ code: 'PROJECTION_NOT_FOUND', message: expect.stringContaining('it has: notes, titles') }),
    );
    expect(tables(target)).toEqual(before);
  });
});
