import { sql } from 'kysely';
import type { CustomHandler } from '../../../src/projection/index.ts';

/**
 * A custom handler that declares its table (`tables: ['counts']`): rows per
 * `n` in ctx.tables.counts, each stamped with the handler's version. Its
 * init adds the rows it gets (it may be called once per part of a build),
 * and it writes through ctx.db's builders, which resolve names in the target.
 */
export function counter(version: string): CustomHandler {
  const bump = async (ctx: Parameters<CustomHandler['apply']>[1], n: unknown, by: number) => {
    await ctx.db
      .insertInto(ctx.tables.counts as string)
      .values({ n, c: by, ver: version })
      .onConflict((oc) => oc.column('n').doUpdateSet({ c: sql`c + ${by}` }))
      .execute();
  };
  return {
    version,
    async init(rows, ctx) {
      await ctx.db.schema
        .createTable(ctx.tables.counts as string)
        .ifNotExists()
        .addColumn('n', 'integer', (c) => c.primaryKey())
        .addColumn('c', 'integer', (c) => c.notNull())
        .addColumn('ver', 'text', (c) => c.notNull())
        .execute();
      const by = new Map<string, number>();
      for (const r of rows) by.set(String(r.n), (by.get(String(r.n)) ?? 0) + 1);
      for (const [n, c] of by) await bump(ctx, Number(n), c);
    },
    async apply(e, ctx) {
      if (e.before !== null) await bump(ctx, e.before.n, -1);
      if (e.after !== null) await bump(ctx, e.after.n, 1);
    },
  };
}
