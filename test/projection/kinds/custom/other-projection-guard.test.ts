// a custom handler that writes a table another projection of its target owns fails its batch before the write, and nothing of it is committed
import path from 'node:path';
import { sql } from 'kysely';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import type { CustomHandler, ProjectionDefinition } from '../../../../src/projection/index.ts';
import { handlerWith, type Write } from '../../support/seen-handler.ts';

/*
 * A handler resolves unqualified names in the target, where a mirror of
 * `notes` is a table named notes: `db.insertInto('notes')` written for the
 * handler's own bookkeeping lands in the mirror, which then holds a row its
 * source never had (verify finds it later; every sync before then goes on).
 * So a statement that writes a table another projection of the target owns
 * (a mirror's, a map's, an fts5 index, a custom projection's declared
 * table) is refused before it runs, as a write to sluice's own tables is:
 * CUSTOM_WROTE_PROJECTION, naming both projections; nothing of the batch is
 * committed, and the other projection's rows are as they were.
 */

const WRITES: Record<string, { readonly owner: string; readonly write: Write }> = {
  "an insert into a mirror's table by the query builder": {
    owner: 'notes',
    write: (db) => db.insertInto('notes').values({ id: 50, body: 'not in the source' }).execute(),
  },
  "a raw DELETE of a mirror's rows": { owner: 'notes', write: (db) => sql`DELETE FROM tgt.notes`.execute(db) },
  "an UPDATE of a map's table": { owner: 'bodies', write: (db) => db.updateTable('bodies').set({ text: 'edited' }).execute() },
  'an insert into an fts5 index': {
    owner: 'search',
    write: (db) => sql`INSERT INTO tgt.search (rowid, body) VALUES (77, 'planted')`.execute(db),
  },
  "a DROP of another custom projection's declared table": { owner: 'counter', write: (db) => db.schema.dropTable('counts').execute() },
};

const counter: CustomHandler = {
  version: '1',
  async init(rows, { db, tables }) {
    await db.schema
      .createTable(tables.counts as string)
      .ifNotExists()
      .addColumn('n', 'integer')
      .execute();
    let n = 0;
    for (const _ of rows) n++;
    await db
      .insertInto(tables.counts as string)
      .values({ n })
      .execute();
  },
  async apply(_e, { db, tables }) {
    await db
      .updateTable(tables.counts as string)
      .set((eb) => ({ n: eb('n', '+', 1) }))
      .execute();
  },
};

function definitions(write: Write): ProjectionDefinition[] {
  return [
    { name: 'notes', source: 'notes', kind: 'mirror' },
    { name: 'bodies', source: 'notes', kind: 'map', columns: { id: 'id', text: 'body' } },
    { name: 'search', source: 'notes', kind: 'fts5', columns: ['body'] },
    { name: 'counter', source: 'notes', kind: 'custom', tables: ['counts'], handler: counter },
    { name: 'seen', source: 'notes', kind: 'custom', handler: handlerWith(write) },
  ] as ProjectionDefinition[];
}

function targetState(file: string): unknown {
  const t = openDatabase(file, { readonly: true });
  try {
    return {
      notes: t.prepare('SELECT * FROM notes ORDER BY id').raw().all(),
      bodies: t.prepare('SELECT * FROM bodies ORDER BY id').raw().all(),
      search: t.prepare("SELECT rowid FROM search WHERE search MATCH 'planted OR first OR second' ORDER BY rowid").pluck().all(),
      counts: t.prepare("SELECT * FROM sqlite_schema WHERE name = 'counts'").all().length,
      seen: t.prepare('SELECT id FROM seen ORDER BY id').pluck().all(),
      cursor: t.prepare("SELECT seq, state FROM _sluice_projections WHERE name = 'seen'").get(),
    };
  } finally {
    t.close();
  }
}

describe("every way a handler could write another projection's table", () => {
  for (const [what, { owner, write }] of Object.entries(WRITES)) {
    test(`${what} fails the batch with CUSTOM_WROTE_PROJECTION before it runs, and nothing of it is committed`, async ({ makeDb, tmp }) => {
      const src = makeDb('app.db', "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'first')");
      enable(src.db, ['notes']);
      const target = path.join(tmp, 'cache.db');
      const first = await sync(src.file, target, { projections: definitions(write) });
      expect(first.projections.map((p) => p.error?.code ?? null)).toEqual([null, null, null, null, null]);
      const before = targetState(target);
      src.db.exec("INSERT INTO notes VALUES (2, 'second')");
      const r = await sync(src.file, target, { projections: definitions(write) });
      const seen = r.projections.find((p) => p.name === 'seen');
      expect(seen?.error?.code, seen?.error?.message).toBe('CUSTOM_WROTE_PROJECTION');
      expect(seen?.error?.message).toContain(`projection ${owner}`);
      const after = targetState(target) as Record<string, unknown>;
      const was = before as Record<string, unknown>;
      expect(after.seen, 'the failed batch of seen kept nothing').toEqual(was.seen);
      expect(after.cursor).toEqual(was.cursor);
      expect(after.counts, "counter's table is still there").toBe(1);
      // The other projections applied the event as sluice writes it, and nothing else.
      expect(after.notes).toEqual([
        [1n, 'first'],
        [2n, 'second'],
      ]);
      expect(after.bodies).toEqual([
        [1n, 'first'],
        [2n, 'second'],
      ]);
      expect(after.search).toEqual([1n, 2n]);
    });
  }
});
