// an update between zero and negative zero is the documented blind spot and verify names it
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { journalEvents, pythonExec } from '../../support/journal.ts';

/*
 * No built-in SQL function of SQLite 3.37-3.40 tells 0.0 from -0.0 (only
 * the optional atan2 does), so capture keeps a measured trade-off
 * (docs/journal.md): an update between them in a column without affinity is
 * not journaled. verify compares exact IEEE bytes, so it finds such a row,
 * and its report names the blind spot for the tables that have one.
 */

test('an update from 0.0 to -0.0 in an untyped column is not journaled, and verify reports the row as different with a caveat naming the columns', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb(
    'z.db',
    "CREATE TABLE t (id INTEGER PRIMARY KEY, x, r REAL, label TEXT); INSERT INTO t VALUES (1, 0.0, 0.0, 'a');",
  );
  enable(db, ['t']);
  const target = path.join(tmp, 'cache.db');
  await sync(file, target);
  const before = journalEvents(db).length;
  pythonExec(file, 'UPDATE t SET x = -0.0, r = -0.0 WHERE id = 1');
  // The untyped column holds -0.0 now; the REAL one stored it as 0.
  expect(db.prepare('SELECT x, typeof(x), r FROM t').raw().get()).toEqual([-0, 'real', 0]);
  expect(Object.is(db.prepare('SELECT x FROM t').pluck().get() as number, -0)).toBe(true);
  expect(journalEvents(db).length).toBe(before);
  await sync(file, target);
  const r = await verify(file, target);
  const p = r.projections.find((x) => x.name === 't');
  expect(p).toMatchObject({ ok: false, diffs: [{ key: [1], kind: 'different' }] });
  expect(p?.caveats).toEqual([expect.stringContaining('0.0 and -0.0 in x of t')]);
  // A table without such columns has no caveat.
  expect(p?.caveats?.[0]).not.toContain('label');
});
