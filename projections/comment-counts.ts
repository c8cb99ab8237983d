import type { CustomHandler } from '../src/projection/definition.ts';

/**
 * A custom projection: comments per issue, kept by a handler that gets each
 * event and a Kysely instance bound to the target transaction. It declares
 * its table ("tables" below), so sluice rebuilds it beside the live one and
 * swaps it in; the handler uses the name ctx.tables gives.
 */
const handler: CustomHandler = {
  version: '1',
  async init(rows, { db, tables }) {
    const table = tables.comment_counts as string;
    await db.schema
      .createTable(table)
      .ifNotExists()
      .addColumn('repo_id', 'integer', (c) => c.notNull())
      .addColumn('issue_number', 'integer', (c) => c.notNull())
      .addColumn('comments', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('comment_counts_pk', ['repo_id', 'issue_number'])
      .execute();
    for (const row of rows) await bumpCount(db, table, row.repo_id, row.issue_number, 1);
  },
  async apply(event, { db, tables }) {
    const table = tables.comment_counts as string;
    if (event.before !== null) await bumpCount(db, table, event.before.repo_id, event.before.issue_number, -1);
    if (event.after !== null) await bumpCount(db, table, event.after.repo_id, event.after.issue_number, 1);
  },
};

async function bumpCount(db: import('kysely').Kysely<any>, table: string, repo: unknown, issue: unknown, delta: number): Promise<void> {
  await db
    .insertInto(table)
    .values({ repo_id: repo, issue_number: issue, comments: delta })
    .onConflict((oc) => oc.columns(['repo_id', 'issue_number']).doUpdateSet((eb) => ({ comments: eb('comments', '+', delta) })))
    .execute();
  await db.deleteFrom(table).where('repo_id', '=', repo).where('issue_number', '=', issue).where('comments', '<=', 0).execute();
}

export default [
  {
    name: 'comment_counts',
    source: 'comments',
    kind: 'custom' as const,
    tables: ['comment_counts'],
    handler,
  },
];
