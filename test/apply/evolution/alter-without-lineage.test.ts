// an alter recorded by an older sluice without its column lineage counts each column as dropped and added
import fs from 'node:fs';
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { copyOldFixture } from '../../support/old-fixture.ts';
import { openDatabase, heldFile } from '../../../src/sqlite/index.ts';
import { decodeCursor, encodeCursor } from '../../../src/feed/index.ts';
import { alter, readDdlLog, DDL_TABLE_SQL } from '../../../src/capture/index.ts';
import { explainAlter } from '../../../src/apply/evolution/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { contents } from '../../cli/support/readers-of-a.ts';

/*
 * fixtures/round2-alter (see its make.ts) holds a source whose `sluice
 * alter` (by the sluice before the lineage column) dropped `a` and added a
 * column of that name again, and a target synced before it. That row says
 * only the column names before and after, which read the same for `a`: it
 * cannot tell a column kept from one dropped and added again, so each of
 * its columns counts as dropped plus added, and every projection of the
 * table rebuilds instead of going on with the old values. The next alter
 * adds the lineage column to _sluice_ddl in place; the old row keeps none.
 */

/** The fixture copied into `tmp`, its cursors pointed at the copy (support/old-fixture.ts). */
function copyFixture(tmp: string): { source: string; target: string } {
  const { source, targets } = copyOldFixture('round2-alter', tmp, ['target']);
  return { source, target: targets[0] as string };
}

const READERS = ['m', 'mc', 'mf', 'f'];

test('an older alter row without column lineage makes every projection of its table rebuild (none goes on with the old values), and the next alter adds the lineage column in place', async ({
  tmp,
}) => {
  const { source, target } = copyFixture(tmp);
  const e = await explainAlter(source, target);
  const said = Object.fromEntries(e.projections.map((p) => [p.name, [p.classification, p.sync.does]]));
  for (const n of [...READERS, 'mb']) {
    expect(said[n]?.[0], n).toBe('Rebuildable');
    expect(said[n]?.[1], n).toBe('rebuild');
  }
  const r = await sync(source, target);
  for (const p of r.projections) expect([p.name, p.state, p.rebuilt !== undefined]).toEqual([p.name, 'active', true]);
  const c = contents(source, target);
  for (const n of READERS) expect(c[n]?.held, n).toEqual(c[n]?.fromSource);
  expect((await verify(source, target)).ok).toBe(true);

  // The next alter migrates the log in place: the old row keeps no lineage, the new one has it.
  const db = openDatabase(source);
  try {
    alter(db, "ALTER TABLE t ADD COLUMN c TEXT DEFAULT 'c'");
    expect(db.prepare("SELECT sql FROM sqlite_schema WHERE name = '_sluice_ddl'").pluck().get()).toBe(DDL_TABLE_SQL);
    const log = readDdlLog(db);
    expect(log.map((x) => x.tables.map((t) => t.columnsFrom ?? null))).toEqual([[null], [['id', 'b', 'n', 'a', null]]]);
    db.exec("UPDATE t SET b = 'changed' WHERE id = 1");
  } finally {
    db.close();
  }
  // A column added beside what they read: each goes on from its cursor.
  const again = await sync(source, target);
  for (const p of again.projections) expect([p.name, p.state, p.rebuilt]).toEqual([p.name, 'active', undefined]);
  const after = contents(source, target);
  for (const n of READERS) expect(after[n]?.held, n).toEqual(after[n]?.fromSource);
  expect((await verify(source, target)).ok).toBe(true);
});
