// a sync with nothing it can mirror names why each captured table is not mirrored instead of telling to capture it in images mode
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { SluiceError } from '../../../src/errors.ts';

/*
 * Review round 3. A source whose only captured table cannot be mirrored
 * (its key is declared COLLATE BINARY over a NOCASE column:
 * KEY_COLLATION_MISMATCH) made sync fail with NOTHING_TO_SYNC "captures no
 * table in images mode ... Run sluice enable ... --mode images": the table
 * is captured in images mode, that command changes nothing, and the reason
 * its mirror cannot be made (which sync prints when another table is
 * mirrored) was dropped.
 */

const COLLATED = "CREATE TABLE t (k TEXT COLLATE NOCASE, v, PRIMARY KEY (k COLLATE BINARY)); INSERT INTO t VALUES ('a', 1), ('A', 2);";

test('a source whose only images-mode table cannot be mirrored fails with the reason and its fix, not a call to enable it in images mode', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb('s.db', COLLATED);
  enable(db, ['t']);
  const err = await sync(file, path.join(tmp, 'target.db')).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SluiceError);
  const e = err as SluiceError;
  expect(e.code).toBe('NOTHING_TO_SYNC');
  expect(e.message).toContain('t: KEY_COLLATION_MISMATCH');
  expect(e.message).toContain("Declare the key with the column's collation");
  expect(e.message).not.toContain('--mode images');
  expect(e.message).not.toContain('captures no table in images mode');
});

test('beside a table captured in keys mode, each is named with its own fix', async ({ makeDb, tmp }) => {
  const { db, file } = makeDb('s.db', `${COLLATED} CREATE TABLE k (id INTEGER PRIMARY KEY, v);`);
  enable(db, ['t']);
  enable(db, ['k'], { mode: 'keys' });
  const err = await sync(file, path.join(tmp, 'target.db')).then(
    () => undefined,
    (e: unknown) => e,
  );
  const e = err as SluiceError;
  expect(e.code).toBe('NOTHING_TO_SYNC');
  expect(e.message).toContain('t: KEY_COLLATION_MISMATCH');
  expect(e.message).toMatch(/k: captured in keys mode.*sluice enable .*s\.db k --mode images/);
});

test('a source that captures tables in keys mode only is still told to capture them in images mode', async ({ makeDb, tmp }) => {
  const { db, file } = makeDb('s.db', 'CREATE TABLE k (id INTEGER PRIMARY KEY, v);');
  enable(db, ['k'], { mode: 'keys' });
  const err = await sync(file, path.join(tmp, 'target.db')).then(
    () => undefined,
    (e: unknown) => e,
  );
  const e = err as SluiceError;
  expect(e.code).toBe('NOTHING_TO_SYNC');
  expect(e.message).toMatch(/captures no table in images mode.*sluice enable .*s\.db k --mode images/);
});
