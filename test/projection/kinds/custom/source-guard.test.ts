// a custom handler reads the source but every way it could write the source fails its batch before the write
import path from 'node:path';
import { sql } from 'kysely';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync, Syncer } from '../../../../src/apply/sync/index.ts';
import { openDatabase, type Db } from '../../../../src/sqlite/index.ts';
import type { CustomHandler } from '../../../../src/projection/index.ts';
import { handlerWith, type Write } from '../../support/seen-handler.ts';

/*
 * A handler may read the source (a raw SQL name without a schema is the
 * source's, as docs/projections.md says), and may write the target and
 * TEMP; every statement through ctx.db that would write the source is
 * refused before it runs, whatever the route: the query builder pointed at
 * the source's schema, raw DELETE and REPLACE, a pragma that writes the
 * source's header, a TEMP trigger or a TEMP view whose INSTEAD OF trigger
 * writes the source. The batch fails with CUSTOM_WROTE_SOURCE and nothing of
 * it is committed: not the target's rows, not its cursor, not the source.
 */

const WRITES: Record<string, Write> = {
  "the query builder's insert into the source's schema": (db) => db.withSchema('main').insertInto('audit').values({ what: 'x' }).execute(),
  "the query builder's delete from the source's schema": (db) => db.withSchema('main').deleteFrom('notes').execute(),
  'a raw DELETE': (db) => sql`DELETE FROM notes WHERE id = 1`.execute(db),
  'a raw REPLACE': (db) => sql`REPLACE INTO notes VALUES (1, 'replaced')`.execute(db),
  'a raw INSERT OR REPLACE into the source by its schema name': (db) => sql`INSERT OR REPLACE INTO main.audit VALUES ('x')`.execute(db),
  'a pragma that sets the source user_version': (db) => sql`PRAGMA main.user_version = 7`.execute(db),
  'a raw ALTER TABLE of a source table': (db) => sql`ALTER TABLE audit ADD COLUMN extra TEXT`.execute(db),
  'a raw DROP TABLE of a source table': (db) => sql`DROP TABLE audit`.execute(db),
  'PRAGMA optimize (it analyzes the source)': (db) => sql`PRAGMA optimize`.execute(db),
  'a write to the target, checked and allowed, run again once a TEMP trigger on its table writes the source': async (db) => {
    await db.insertInto('seen').values({ id: 98 }).execute();
    await sql`CREATE TEMP TRIGGER bridge AFTER INSERT ON tgt.seen BEGIN INSERT INTO main.audit VALUES ('via a trigger'); END`.execute(db);
    await db.insertInto('seen').values({ id: 99 }).execute();
  },
  'an insert into a TEMP view whose INSTEAD OF trigger writes the source': async (db) => {
    await sql`CREATE TEMP VIEW door AS SELECT what FROM main.audit`.execute(db);
    await sql`CREATE TEMP TRIGGER door_in INSTEAD OF INSERT ON door BEGIN INSERT INTO main.audit VALUES (new.what); END`.execute(db);
    await sql`INSERT INTO door VALUES ('via a view')`.execute(db);
  },
};

function source(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, name: string) {
  const src = makeDb(
    `${name}.db`,
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); CREATE TABLE audit (what TEXT); INSERT INTO notes VALUES (1, 'first')",
  );
  enable(src.db, ['notes']);
  return src;
}

/** Everything of the source a write could change: schema, rows of both tables, the header's user_version. */
function sourceState(db: Db): unknown {
  return {
    schema: db.prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY name').all(),
    notes: db.prepare('SELECT * FROM notes ORDER BY id').all(),
    audit: db.prepare('SELECT * FROM audit').all(),
    journal: db.prepare('SELECT count(*) FROM _sluice_journal').pluck().get(),
    userVersion: db.pragma('user_version', { simple: true }),
  };
}

function targetState(file: string): unknown {
  const t = openDatabase(file, { readonly: true });
  try {
    return {
      seen: t.prepare('SELECT id FROM seen ORDER BY id').pluck().all(),
      cursor: t.prepare("SELECT seq, cursor, state FROM _sluice_projections WHERE name = 'seen'").get(),
    };
  } finally {
    t.close();
  }
}

describe('every way a handler could write the source', () => {
  for (const [what, write] of Object.entries(WRITES)) {
    test(`${what} fails the batch with CUSTOM_WROTE_SOURCE before it runs, and nothing is committed`, async ({ makeDb, tmp }) => {
      const src = source(makeDb, 'app');
      const target = path.join(tmp, 'cache.db');
      const defs = [{ name: 'seen', source: 'notes', kind: 'custom' as const, handler: handlerWith(write) }];
      expect((await sync(src.file, target, { projections: defs })).projections[0]?.error).toBeUndefined();
      src.db.exec("INSERT INTO notes VALUES (2, 'second')");
      const before = { source: sourceState(src.db), target: targetState(target) };
      const r = await sync(src.file, target, { projections: defs });
      expect(r.projections[0]?.error?.code).toBe('CUSTOM_WROTE_SOURCE');
      expect({ source: sourceState(src.db), target: targetState(target) }).toEqual(before);
    });
  }
});

/** Writes that reach around the source's guard, or at sluice's own tables in the target: CUSTOM_WROTE_SLUICE. */
const SLUICE_WRITES: Record<string, (file: string) => Write> = {
  'the source attached again under another name, and written there': (file) => async (db) => {
    await sql`ATTACH ${file} AS s2`.execute(db);
    await sql`DELETE FROM s2.notes`.execute(db);
  },
  "a DELETE of the target's projection rows (sluice's own table)": () => (db) => sql`DELETE FROM tgt._sluice_projections`.execute(db),
  "an UPDATE of a projection's cursor": () => (db) => sql`UPDATE tgt._sluice_projections SET seq = 0`.execute(db),
  "a DROP of the target's info table": () => (db) => sql`DROP TABLE tgt._sluice_target`.execute(db),
  'the target detached': () => (db) => sql`DETACH tgt`.execute(db),
};

describe("every way a handler could write sluice's own tables, or reach the source another way", () => {
  for (const [what, write] of Object.entries(SLUICE_WRITES)) {
    test(`${what} fails the batch with CUSTOM_WROTE_SLUICE before it runs, and nothing is committed`, async ({ makeDb, tmp }) => {
      const src = source(makeDb, 'app');
      const target = path.join(tmp, 'cache.db');
      const defs = [{ name: 'seen', source: 'notes', kind: 'custom' as const, handler: handlerWith(write(src.file)) }];
      expect((await sync(src.file, target, { projections: defs })).projections[0]?.error).toBeUndefined();
      src.db.exec("INSERT INTO notes VALUES (2, 'second')");
      const before = { source: sourceState(src.db), target: targetState(target) };
      const r = await sync(src.file, target, { projections: defs });
      expect(r.projections[0]?.error?.code).toBe('CUSTOM_WROTE_SLUICE');
      expect({ source: sourceState(src.db), target: targetState(target) }).toEqual(before);
      // And the next sync, with a handler that writes only its own table, applies the batch.
      const fine = [{ name: 'seen', source: 'notes', kind: 'custom' as const, handler: handlerWith(async () => undefined) }];
      expect((await sync(src.file, target, { projections: fine })).projections[0]?.error).toBeUndefined();
    });
  }
});

test('a handler reads the source by raw SQL and by the builder, writes TEMP and the target by unqualified names, and its batch commits', async ({
  makeDb,
  tmp,
}) => {
  const src = source(makeDb, 'app');
  const target = path.join(tmp, 'cache.db');
  const reader: CustomHandler = {
    version: '1',
    async init(_rows, { db }) {
      await db.schema
        .createTable('seen')
        .ifNotExists()
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('notes', 'integer')
        .execute();
    },
    async apply(e, { db }) {
      await sql`CREATE TEMP TABLE IF NOT EXISTS scratch (n INTEGER)`.execute(db);
      // Unqualified in raw SQL: the source's notes.
      const raw = await sql<{ n: bigint }>`SELECT count(*) AS n FROM notes`.execute(db);
      const built = await db
        .withSchema('main')
        .selectFrom('notes')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      expect(built.n).toBe(raw.rows[0]?.n);
      await sql`INSERT INTO temp.scratch VALUES (${raw.rows[0]?.n})`.execute(db);
      // `seen` is only in the target: an unqualified name finds it there.
      await sql`INSERT INTO seen VALUES (${e.key[0]}, ${raw.rows[0]?.n})`.execute(db);
    },
  };
  const defs = [{ name: 'seen', source: 'notes', kind: 'custom' as const, handler: reader }];
  await sync(src.file, target, { projections: defs });
  src.db.exec("INSERT INTO notes VALUES (2, 'second'); INSERT INTO notes VALUES (3, 'third')");
  const r = await sync(src.file, target, { projections: defs });
  expect(r.projections[0]?.error).toBeUndefined();
  expect(r.projections[0]?.applied).toBe(2);
  const t = openDatabase(target, { readonly: true });
  expect(t.prepare('SELECT id, notes FROM seen ORDER BY id').raw().all()).toEqual([
    [2n, 3n],
    [3n, 3n],
  ]);
  t.close();
});

test("a raw statement allowed while its unqualified table was only the target's is refused once the source has a table of that name, in the same follower", async ({
  makeDb,
  tmp,
}) => {
  const src = source(makeDb, 'app');
  const target = path.join(tmp, 'cache.db');
  const unqualified: CustomHandler = {
    version: '1',
    async init(rows, { db }) {
      await db.schema
        .createTable('seen')
        .ifNotExists()
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .execute();
      for (const r of rows) await sql`INSERT OR REPLACE INTO seen VALUES (${r.id})`.execute(db);
    },
    async apply(e, { db }) {
      await sql`INSERT OR REPLACE INTO seen VALUES (${e.key[0]})`.execute(db);
    },
  };
  const syncer = await Syncer.open(src.file, target, {
    projections: [{ name: 'seen', source: 'notes', kind: 'custom', handler: unqualified }],
  });
  try {
    await syncer.runOnce();
    src.db.exec("INSERT INTO notes VALUES (2, 'second')");
    expect((await syncer.runOnce()).projections[0]?.error).toBeUndefined();
    // The app makes a table of that name in the source: the same statement text now names it.
    src.db.exec("CREATE TABLE seen (id INTEGER); INSERT INTO notes VALUES (3, 'third')");
    const before = sourceState(src.db);
    // (A change to the source's schema makes sync rebuild a custom projection: its init runs the statement.)
    const r = await syncer.runOnce();
    expect(r.projections[0]?.error?.code).toBe('CUSTOM_WROTE_SOURCE');
    expect(sourceState(src.db)).toEqual(before);
    expect(src.db.prepare('SELECT count(*) FROM seen').pluck().get()).toBe(0n);
  } finally {
    syncer.close();
  }
});
