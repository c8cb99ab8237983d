// a batch whose commit fails is rolled back and its failure recorded for health
import { sql } from 'kysely';
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { health } from '../../../src/apply/check/index.ts';
import { readProjection, TARGET_SCHEMA } from '../../../src/apply/target/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * A batch can fail at its COMMIT, after every statement ran: a deferred
 * foreign key of a custom handler's tables that the batch leaves broken
 * (SQLite checks it only then; a busy rollback-journal file fails there
 * too). The step's transaction is rolled back then, like a batch that
 * failed midway, so its failure is recorded in the projection's row in a
 * transaction of its own and health reports it; the connection is in no
 * transaction afterwards, and the next batch is one of its own.
 */

test('a batch whose COMMIT fails (a deferred foreign key its handler broke) is rolled back, and its failure is recorded and shown by health', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, 'CREATE TABLE t (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL)', ['t'], {
    seed: 'INSERT INTO t VALUES (1, 1)',
  });
  const def: ProjectionDefinitionInput = {
    name: 'links',
    source: 't',
    kind: 'custom',
    tables: ['parents', 'links'],
    handler: {
      async init(rows, ctx) {
        const parents = ctx.tables.parents as string;
        const links = ctx.tables.links as string;
        await ctx.db.schema
          .createTable(parents)
          .ifNotExists()
          .addColumn('id', 'integer', (c) => c.primaryKey())
          .execute();
        await ctx.db.schema
          .createTable(links)
          .ifNotExists()
          .addColumn('id', 'integer', (c) => c.primaryKey())
          .addColumn('parent', 'integer', (c) =>
            // (A foreign key names a table of its own database: the bare name.)
            c.modifyEnd(sql`REFERENCES ${sql.id(parents.split('.').pop() as string)} (id) DEFERRABLE INITIALLY DEFERRED`),
          )
          .execute();
        for (const r of rows) {
          await ctx.db
            .insertInto(parents)
            .values({ id: r.parent })
            .onConflict((oc) => oc.doNothing())
            .execute();
          await ctx.db.insertInto(links).values({ id: r.id, parent: r.parent }).execute();
        }
      },
      async apply(e, ctx) {
        // No parent row: every statement runs, and the COMMIT finds the key broken.
        if (e.after !== null)
          await ctx.db
            .insertInto(ctx.tables.links as string)
            .values({ id: e.after.id, parent: e.after.parent })
            .execute();
      },
    },
  };
  const target = path.join(tmp, 'target.db');
  const s = await Syncer.open(src.file, target, { projections: [def] });
  try {
    const built = (await s.runOnce()).projections[0];
    expect(built?.state).toBe('active');
    expect(built?.error).toBeUndefined();
    src.db.exec('INSERT INTO t VALUES (2, 99)');
    const failed = (await s.runOnce()).projections[0];
    expect(failed?.error?.code).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(s.session.db.inTransaction).toBe(false);
    const rec = readProjection(s.session.db, TARGET_SCHEMA, 'links');
    expect(rec).toMatchObject({ state: 'active', lastErrorCode: 'SQLITE_CONSTRAINT_FOREIGNKEY', failures: 1, seq: built?.seq });
    // Nothing of the batch was kept.
    expect(s.session.db.prepare(`SELECT id FROM ${TARGET_SCHEMA}.links ORDER BY id`).pluck().all()).toEqual([1n]);
  } finally {
    s.close();
  }
  const h = health(target);
  expect(h.projections.find((p) => p.name === 'links')?.problems.join('\n')).toMatch(/SQLITE_CONSTRAINT_FOREIGNKEY/);
});
