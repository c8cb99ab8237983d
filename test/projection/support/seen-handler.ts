import type { CustomContext, CustomHandler } from '../../../src/projection/index.ts';

/** A statement a test's handler runs through its ctx.db. */
export type Write = (db: CustomContext['db']) => Promise<unknown>;

/** A handler that records each note it sees in `seen`, and on the second note then does `write` (the last statement it runs). */
export function handlerWith(write: Write): CustomHandler {
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
      if (e.after !== null)
        await db
          .insertInto('seen')
          .values({ id: e.after.id })
          .onConflict((oc) => oc.doNothing())
          .execute();
      if (e.after?.id === 2n) await write(db);
    },
  };
}
