// snapshotProgress 'start' tells a snapshot's start only and copies the table whole, to the same rows
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { sync, type SyncProgress } from '../../../src/apply/sync/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { dumpTables } from '../../cli/support/cli.ts';

/*
 * sluice run's targets show a building phase, not rows. With onProgress and
 * snapshotProgress 'start' a first build is told as it starts and once
 * built (no count, no parts), and copies each table whole as a sync without
 * onProgress does; the default ('rows') tells each part of BUILD_CHUNK rows
 * (the tests run with a small one) of the table's count. Either way the
 * target holds the same rows.
 */

test("with snapshotProgress 'start' a first build is told as it starts and once built, with no count, in one copy, and ends as exact as with rows told", async ({
  tmp,
  makeDb,
}) => {
  const { db, file } = makeDb('app.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
  db.exec(`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 5000) INSERT INTO t SELECT i, 'v' || i FROM s`);
  enable(db, ['t']);
  const projections = [{ name: 't', source: 't', kind: 'mirror' as const }];
  const told = async (snapshotProgress: 'rows' | 'start' | undefined, target: string) => {
    const events: SyncProgress[] = [];
    const r = await sync(file, target, {
      projections,
      onProgress: (e) => events.push(e),
      ...(snapshotProgress === undefined ? {} : { snapshotProgress }),
    });
    expect(r.projections[0]?.snapshotRows).toBe(5000);
    return events.filter((e) => e.phase === 'snapshot');
  };
  const start = await told('start', path.join(tmp, 'start.db'));
  // As it starts, and once built (the step's report), never with a count.
  expect(start.map((e) => [e.rows, e.rowsTotal])).toEqual([
    [0, undefined],
    [5000, undefined],
  ]);
  const rows = await told(undefined, path.join(tmp, 'rows.db'));
  expect(rows.length).toBeGreaterThan(2);
  expect(rows.at(-1)).toMatchObject({ rows: 5000, rowsTotal: 5000 });
  expect(dumpTables(path.join(tmp, 'start.db'), ['t'])).toEqual(dumpTables(path.join(tmp, 'rows.db'), ['t']));
});
