// a custom handler that ends or undoes the batchs transaction fails its batch before the statement runs
import path from 'node:path';
import { sql } from 'kysely';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import type { CustomContext, CustomHandler } from '../../../../src/projection/index.ts';

/*
 * A handler runs inside sluice's transaction for its batch, so that its
 * rows and the projection's cursor commit together. A raw COMMIT, ROLLBACK,
 * BEGIN, RELEASE or ROLLBACK TO through ctx.db would end that transaction or
 * undo part of it while sluice goes on as if it held: the batch's first rows
 * committed without their cursor, or a cursor committed past rows rolled
 * back. Each is refused before it runs (CUSTOM_TRANSACTION_CONTROL), and the
 * batch fails whole: nothing of it is in the target, and its cursor stays.
 */

type Control = (db: CustomContext['db']) => Promise<unknown>;

const CONTROLS: Record<string, Control> = {
  COMMIT: (db) => sql`COMMIT`.execute(db),
  'END (a COMMIT by another name), after a comment': (db) => sql.raw('/* done */ -- now\n  END TRANSACTION').execute(db),
  ROLLBACK: (db) => sql`ROLLBACK`.execute(db),
  BEGIN: (db) => sql`BEGIN IMMEDIATE`.execute(db),
  'SAVEPOINT and ROLLBACK TO of its own': async (db) => {
    await sql`SAVEPOINT mine`.execute(db);
    await sql`ROLLBACK TO mine`.execute(db);
  },
  'RELEASE of a savepoint it did not make': (db) => sql`RELEASE sp1`.execute(db),
};

function handlerWith(control: Control): CustomHandler {
  return {
    version: '1',
    async init(rows, { db }) {
      await db.schema
        .createTable('seen')
        .ifNotExists()
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .execute();
      for (const r of rows) await db.insertInto('seen').values({ id: r.id }).execute();
    },
    async apply(e, { db }) {
      if (e.after === null) return;
      await db.insertInto('seen').values({ id: e.after.id }).execute();
      if (e.after.id === 2n) await control(db);
    },
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

describe('transaction control from a handler', () => {
  for (const [what, control] of Object.entries(CONTROLS)) {
    test(`${what} fails the batch with CUSTOM_TRANSACTION_CONTROL before it runs, and nothing of the batch is committed`, async ({
      makeDb,
      tmp,
    }) => {
      const src = makeDb('app.db', "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'first')");
      enable(src.db, ['notes']);
      const target = path.join(tmp, 'cache.db');
      const defs = [{ name: 'seen', source: 'notes', kind: 'custom' as const, handler: handlerWith(control) }];
      expect((await sync(src.file, target, { projections: defs })).projections[0]?.error).toBeUndefined();
      src.db.exec("INSERT INTO notes VALUES (2, 'second'); INSERT INTO notes VALUES (3, 'third')");
      const before = targetState(target);
      const r = await sync(src.file, target, { projections: defs });
      expect(r.projections[0]?.error?.code).toBe('CUSTOM_TRANSACTION_CONTROL');
      expect(r.projections[0]?.error?.message).toContain('seen');
      expect(targetState(target)).toEqual(before);
    });
  }
});
