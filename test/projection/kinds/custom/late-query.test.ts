// a query through a custom handlers ctx after its call returned is never run and fails the batch
import path from 'node:path';
import { sql } from 'kysely';
import { test, expect } from '../../../support/fixtures.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync, Syncer } from '../../../../src/apply/sync/index.ts';
import { openDatabase, type Db } from '../../../../src/sqlite/index.ts';
import type { CustomContext, CustomHandler } from '../../../../src/projection/index.ts';

/*
 * Each call into a handler (one apply, one init) gets a ctx of its own,
 * which is over once the call has returned. A query through it after that
 * is never run (it would land in whatever transaction is open then), and
 * the batch fails with CUSTOM_HANDLER_LATE_WRITE, committing nothing: one
 * the handler left behind in a promise chain, one behind a turn of the event
 * loop, one made through a ctx kept from init. One that comes after the
 * batch has committed (from a timer) is refused as well, and fails the
 * projection's next batch. A handler that awaits everything, a failing
 * query it catches included, is not affected.
 */

function setup(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, tmp: string) {
  const src = makeDb('app.db', "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'first')");
  enable(src.db, ['notes']);
  return { src, target: path.join(tmp, 'cache.db') };
}

const makeSeen = (db: CustomContext['db']) =>
  db.schema
    .createTable('seen')
    .ifNotExists()
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .execute();

function seenOf(target: string): unknown {
  const t = openDatabase(target, { readonly: true });
  try {
    return {
      seen: t.prepare('SELECT id FROM seen ORDER BY id').pluck().all(),
      seq: Number(t.prepare("SELECT seq FROM _sluice_projections WHERE name = 'seen'").pluck().get()),
    };
  } finally {
    t.close();
  }
}

const LATE: Record<string, CustomHandler> = {
  'a write left in a promise chain': {
    async init(_rows, { db }) {
      await makeSeen(db);
    },
    async apply(e, { db }) {
      void db
        .selectFrom('seen')
        .selectAll()
        .execute()
        .then(() => db.insertInto('seen').values({ id: e.key[0] }).execute());
    },
  },
  'a write after a turn of the event loop': {
    async init(_rows, { db }) {
      await makeSeen(db);
    },
    apply(e, { db }) {
      setImmediate(() => void db.insertInto('seen').values({ id: e.key[0] }).execute());
    },
  },
  'a write through the ctx kept from init': (() => {
    let kept: CustomContext['db'] | undefined;
    return {
      async init(_rows, { db }) {
        await makeSeen(db);
        kept = db;
      },
      async apply(e) {
        await kept?.insertInto('seen').values({ id: e.key[0] }).execute();
      },
    };
  })(),
};

for (const [what, handler] of Object.entries(LATE)) {
  test(`${what} is not run and fails the batch with CUSTOM_HANDLER_LATE_WRITE, committing nothing`, async ({ makeDb, tmp }) => {
    const { src, target } = setup(makeDb, tmp);
    const defs = [{ name: 'seen', source: 'notes', kind: 'custom' as const, handler: { version: '1', ...handler } }];
    expect((await sync(src.file, target, { projections: defs })).projections[0]?.error).toBeUndefined();
    src.db.exec("INSERT INTO notes VALUES (2, 'second'), (3, 'third')");
    const before = seenOf(target);
    const r = await sync(src.file, target, { projections: defs });
    expect(r.projections[0]?.error?.code).toBe('CUSTOM_HANDLER_LATE_WRITE');
    expect(r.projections[0]?.error?.message).toContain('custom projection seen');
    // Let anything still scheduled run: it must not land anywhere either.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seenOf(target)).toEqual(before);
  });
}

test('a write an init leaves behind fails the first build with CUSTOM_HANDLER_LATE_WRITE, and the handler made nothing', async ({
  makeDb,
  tmp,
}) => {
  const { src, target } = setup(makeDb, tmp);
  const sloppy: CustomHandler = {
    version: '1',
    async init(rows, { db }) {
      await makeSeen(db);
      for (const r of rows) void db.insertInto('seen').values({ id: r.id }).execute();
    },
    async apply() {},
  };
  const r = await sync(src.file, target, { projections: [{ name: 'seen', source: 'notes', kind: 'custom', handler: sloppy }] });
  expect(r.projections[0]?.error?.code).toBe('CUSTOM_HANDLER_LATE_WRITE');
  const t = openDatabase(target, { readonly: true });
  expect(t.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'seen'").pluck().get()).toBe(0n);
  t.close();
});

test("a write from a timer that fires after the batch committed is not run, and fails the projection's next batch with CUSTOM_HANDLER_LATE_WRITE", async ({
  makeDb,
  tmp,
}) => {
  const { src, target } = setup(makeDb, tmp);
  let fired = false;
  const handler: CustomHandler = {
    version: '1',
    async init(_rows, { db }) {
      await makeSeen(db);
    },
    async apply(e, { db }) {
      await db.insertInto('seen').values({ id: e.key[0] }).execute();
      setTimeout(() => {
        fired = true;
        void db
          .insertInto('seen')
          .values({ id: Number(e.key[0]) + 100 })
          .execute();
      }, 20);
    },
  };
  const syncer = await Syncer.open(src.file, target, { projections: [{ name: 'seen', source: 'notes', kind: 'custom', handler }] });
  try {
    await syncer.runOnce();
    src.db.exec("INSERT INTO notes VALUES (2, 'second')");
    const first = await syncer.runOnce();
    expect(first.projections[0]?.error).toBeUndefined();
    expect(seenOf(target)).toEqual({ seen: [2n], seq: first.projections[0]?.seq });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(fired).toBe(true);
    src.db.exec("INSERT INTO notes VALUES (3, 'third')");
    const next = await syncer.runOnce();
    expect(next.projections[0]?.error?.code).toBe('CUSTOM_HANDLER_LATE_WRITE');
    expect(next.projections[0]?.error?.message).toContain('sluice reinit');
    expect(seenOf(target)).toEqual({ seen: [2n], seq: first.projections[0]?.seq });
  } finally {
    syncer.close();
  }
});

test('a handler that awaits every query, one that fails and is caught included, commits its batch', async ({ makeDb, tmp }) => {
  const { src, target } = setup(makeDb, tmp);
  const careful: CustomHandler = {
    version: '1',
    async init(_rows, { db }) {
      await makeSeen(db);
    },
    async apply(e, { db }) {
      try {
        await sql`INSERT INTO no_such_table VALUES (1)`.execute(db);
      } catch {
        /* expected: the handler goes on */
      }
      await Promise.all([db.insertInto('seen').values({ id: e.key[0] }).execute(), db.selectFrom('seen').selectAll().execute()]);
    },
  };
  const defs = [{ name: 'seen', source: 'notes', kind: 'custom' as const, handler: careful }];
  await sync(src.file, target, { projections: defs });
  src.db.exec("INSERT INTO notes VALUES (2, 'second'), (3, 'third')");
  const r = await sync(src.file, target, { projections: defs });
  expect(r.projections[0]?.error).toBeUndefined();
  expect(seenOf(target)).toEqual({ seen: [2n, 3n], seq: r.projections[0]?.seq });
});
