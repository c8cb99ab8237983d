import type { CustomHandler } from '../src/projection/definition.ts';

/**
 * A custom projection: comments per issue, kept by a handler that gets each
 * event and a Kysely instance bound to the target transaction.
 */
const handler: CustomHandler = {
  version: '1',
  async init(rows, { db }) {
    await db.schema.dropTable('comment_counts').ifExists().execute();
    await db.schema
      .createTable('comment_counts')
      .addColumn('repo_id', 'integer', (c) => c.notNull())
      .addColumn('issue_number', 'integer', (c) => c.notNull())
      .addColumn('comments', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('comment_counts_pk', ['repo_id', 'issue_number'])
      .execute();
    for (const row of rows) await bumpCount(db, row.repo_id, row.issue_number, 1);
  },
  async apply(event, { db }) {
    if (event.before !== null) await bumpCount(db, event.before.repo_id, event.before.issue_number, -1);
    if (event.after !== null) await bumpCount(db, event.after.repo_id, event.after.issue_number, 1);
  },
};

async function bumpCount(db: import('kysely').Kysely<any>, repo: unknown, issue: unknown, delta: number): Promise<void> {
  await db
    .insertInto('comment_counts')
    .values({ repo_id: repo, issue_number: issue, comments: delta })
    .onConflict((oc) => oc.columns(['repo_id', 'issue_number']).doUpdateSet((eb) => ({ comments: eb('comments', '+', delta) })))
    .execute();
  await db.deleteFrom('comment_counts').where('repo_id', '=', repo).where('issue_number', '=', issue).where('comments', '<=', 0).execute();
}

export default [
  {
    name: 'comment_counts',
    source: 'comments',
    kind: 'custom' as const,
    handler,
  },
];
