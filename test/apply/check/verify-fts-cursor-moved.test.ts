// verify finds a hand-edited fts5 index even when a follower moves the cursor while it runs
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { runCli, runSqliteCli } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { projectionSeq, scalar } from '../../cli/support/cli.ts';

/*
 * verify compares the rows in one read transaction, then checks an fts5
 * index against its rows (FTS5's integrity-check) in a write transaction of
 * its own. A follower (`sluice sync --follow`) committing between the two
 * moved the cursor, and verify skipped the integrity-check and said ok for
 * an index with an entry no row has. The check does not depend on the
 * cursor: it runs whatever the cursor did meanwhile.
 */
test('an index with a hand-inserted entry is not ok, and is suspended, though a sync moved the cursor during verify', async ({
  makeDb,
  tmp,
}) => {
  const { db, file: src } = makeDb(
    'app.db',
    `CREATE TABLE t (id INTEGER PRIMARY KEY, title TEXT, body TEXT);
     WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200)
       INSERT INTO t SELECT i, 'title ' || i, 'body words number ' || i FROM c;`,
  );
  enable(db, ['t']);
  const tgt = path.join(tmp, 'cache.db');
  await sync(src, tgt, { projections: [{ name: 'ts', source: 't', kind: 'fts5', columns: ['title', 'body'], content: 'external' }] });
  // Another program adds an entry for row 5 to the index (its key table untouched).
  runSqliteCli(tgt, "INSERT INTO ts(rowid, title, body) VALUES (5, 'zebra', 'zebra');");
  const before = projectionSeq(tgt, 'ts');

  let moved = false;
  const r = await verify(src, tgt, {
    // Once the rows are compared, before the index is checked: a source write, and a sync applying it.
    onProgress: (p) => {
      if (moved || p.step !== undefined || p.done !== p.count) return;
      moved = true;
      runSqliteCli(src, "UPDATE t SET body = 'changed' WHERE id = 100;");
      const s = runCli(['sync', src, tgt]);
      expect(s.status, s.stderr).toBe(0);
    },
  });
  expect(moved).toBe(true);
  expect(projectionSeq(tgt, 'ts')).toBeGreaterThan(before);
  expect(r.ok).toBe(false);
  expect(r.projections[0]).toMatchObject({ name: 'ts', ok: false, reason: 'TARGET_EDITED', suspended: true });
  expect(scalar(tgt, "SELECT state || ' ' || reason FROM _sluice_projections WHERE name = 'ts'")).toBe('suspended TARGET_EDITED');
});

/*
 * The same index edited by hand while verify compares it, and suspended
 * (TARGET_EDITED) meanwhile by another process that saw the edit (a
 * follower, or here a second verify): the row's state changed under verify,
 * and it skipped the integrity-check and said ok, exit 0, for an index that
 * was edited and that health calls suspended.
 */
test('an index edited by hand and suspended by another process while verify runs is not ok', async ({ makeDb, tmp }) => {
  const { db, file: src } = makeDb(
    'app.db',
    `CREATE TABLE t (id INTEGER PRIMARY KEY, title TEXT, body TEXT);
     WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200)
       INSERT INTO t SELECT i, 'title ' || i, 'body words number ' || i FROM c;`,
  );
  enable(db, ['t']);
  const tgt = path.join(tmp, 'cache.db');
  await sync(src, tgt, { projections: [{ name: 'ts', source: 't', kind: 'fts5', columns: ['title', 'body'] }] });

  let edited = false;
  const r = await verify(src, tgt, {
    // Once the rows are compared, before the index is checked: row 7's entries leave the index (its key table
    // untouched), and another process finds that and suspends the index.
    onProgress: (p) => {
      if (edited || p.step !== undefined || p.done !== p.count) return;
      edited = true;
      runSqliteCli(tgt, "INSERT INTO ts(ts, rowid, title, body) SELECT 'delete', rowid, title, body FROM ts_src WHERE _k0 = 7;");
      const other = runCli(['verify', src, tgt]);
      expect(other.status, other.stdout + other.stderr).toBe(3);
    },
  });
  expect(edited).toBe(true);
  expect(scalar(tgt, "SELECT state || ' ' || reason FROM _sluice_projections WHERE name = 'ts'")).toBe('suspended TARGET_EDITED');
  expect(r.ok).toBe(false);
  expect(r.projections[0]).toMatchObject({ name: 'ts', ok: false, reason: 'TARGET_EDITED' });
  expect(r.projections[0]?.skipped).toContain('FTS5 integrity-check');
});
