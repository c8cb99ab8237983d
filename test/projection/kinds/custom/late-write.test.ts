// a custom handler that does not await its writes fails its batch with custom handler late write and health names it
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, runPython } from '../../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../../src/cli/index.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { loadDefinitions } from '../../../../src/projection/index.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { runCliAsync, parseJson } from '../../../cli/support/cli.ts';

/*
 * A handler that calls ctx.db without await returns before its write has
 * run: the write used to run later, in whatever transaction was open then
 * (the next event's, another projection's, or none), and per-issue counts
 * drifted while health said ok. A query through a handler's ctx after its
 * apply has resolved fails the batch instead, with CUSTOM_HANDLER_LATE_WRITE:
 * nothing of that batch is committed (the stray write neither), the other
 * projection applies its own batch and nothing else, and health exits 3
 * naming the code and what to do.
 */

const DEFS = `import type { CustomHandler } from 'sluice';

const counts: CustomHandler = {
  version: '1',
  async init(rows, { db }) {
    await db.schema.createTable('per_issue').ifNotExists()
      .addColumn('issue', 'integer', (c) => c.primaryKey()).addColumn('n', 'integer').execute();
    for (const r of rows) await bump(db, r.issue);
  },
  async apply(e, { db }) {
    // The bug: no await.
    if (e.after !== null) bump(db, e.after.issue);
  },
};

function bump(db: import('kysely').Kysely<any>, issue: unknown) {
  return db.insertInto('per_issue').values({ issue, n: 1 })
    .onConflict((oc) => oc.column('issue').doUpdateSet((eb) => ({ n: eb('per_issue.n', '+', 1) }))).execute();
}

const log: CustomHandler = {
  version: '1',
  async init(_rows, { db }) {
    await db.schema.createTable('log').ifNotExists().addColumn('seq', 'integer').execute();
  },
  async apply(e, { db }) {
    await db.insertInto('log').values({ seq: e.seq }).execute();
  },
};

export default [
  { name: 'per_issue', source: 'comments', kind: 'custom' as const, handler: counts },
  { name: 'log', source: 'comments', kind: 'custom' as const, handler: log },
];
`;

test('a handler that writes through ctx.db without await fails its batch with CUSTOM_HANDLER_LATE_WRITE, the stray write lands nowhere, the other projection applies its batch, and health exits 3 naming it', async ({
  tmp,
  makeDb,
}) => {
  const defs = path.join(tmp, 'counts.ts');
  fs.writeFileSync(defs, DEFS);
  const { db, file } = makeDb(
    'app.db',
    'CREATE TABLE comments (id INTEGER PRIMARY KEY, issue INTEGER, body TEXT); INSERT INTO comments VALUES (1, 10, NULL)',
  );
  enable(db, ['comments']);
  const target = path.join(tmp, 'cache.db');
  const first = await sync(file, target, { projections: await loadDefinitions(defs) });
  expect(first.projections.map((p) => p.error)).toEqual([undefined, undefined]);
  runPython(
    'import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.executemany("INSERT INTO comments (issue) VALUES (?)", [(10,), (11,), (11,)])\nc.commit()\nc.close()',
    [file],
  );
  const t = openDatabase(target, { readonly: true });
  const cursorOf = (name: string) => t.prepare('SELECT seq FROM _sluice_projections WHERE name = ?').pluck().get(name);
  const perIssueBefore = cursorOf('per_issue');

  const r = await runCliAsync(['sync', file, target, '--json']);
  expect(r.status, r.stderr).toBe(1);
  const report = parseJson(r, S.syncOutput);
  const perIssue = report.projections.find((p) => p.name === 'per_issue');
  expect(perIssue?.error?.code).toBe('CUSTOM_HANDLER_LATE_WRITE');
  expect(perIssue?.error?.message).toContain('per_issue');
  expect(perIssue?.error?.message).toContain('await');
  expect(report.projections.find((p) => p.name === 'log')).toMatchObject({ applied: 3, state: 'active' });
  expect(report.projections.find((p) => p.name === 'log')?.error).toBeUndefined();
  // The init's count only: no stray increment committed, in its own batch or in log's.
  expect(t.prepare('SELECT issue, n FROM per_issue ORDER BY issue').raw().all()).toEqual([[10n, 1n]]);
  expect(cursorOf('per_issue')).toBe(perIssueBefore);
  expect(t.prepare('SELECT count(*) FROM log').pluck().get()).toBe(3n);
  t.close();

  const h = await runCliAsync(['health', target, '--json']);
  expect(h.status, h.stderr).toBe(3);
  const ph = parseJson(h, S.healthOutput).projections.find((p) => p.name === 'per_issue');
  expect(ph?.needsAction).toBe(true);
  expect(ph?.failure?.code).toBe('CUSTOM_HANDLER_LATE_WRITE');
  expect(ph?.problems.join('\n')).toMatch(/CUSTOM_HANDLER_LATE_WRITE.*await every query/);
  const plain = await runCliAsync(['health', target]);
  expect(plain.status).toBe(3);
  expect(plain.stdout + plain.stderr).toContain('CUSTOM_HANDLER_LATE_WRITE');
});
