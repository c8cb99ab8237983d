// a replace through the hidden rowid of a table with a declared key never leaves a mirror active and stale
import path from 'node:path';
import { test, expect, runSqliteCli } from '../../../support/fixtures.ts';
import { enable } from '../../../../src/capture/index.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { pythonExec } from '../../../support/journal.ts';
import { tableCells } from '../../../apply/support/target.ts';

/*
 * A rowid table with a declared non-INTEGER key still has a rowid, and a
 * REPLACE that names it (`INSERT OR REPLACE INTO t(rowid, ...)`, `UPDATE OR
 * REPLACE t SET rowid = ...`) deletes the row holding that rowid. The REPLACE
 * guards look up the key and the UNIQUE indexes only, so with
 * recursive_triggers off (Python, the sqlite3 shell) the delete is never
 * journaled and the mirror stays active with the deleted row.
 */

const SCHEMA = 'CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, v)';
const SEED = "INSERT INTO t (rowid, k, v) VALUES (1, 'a', 1), (2, 'b', 2);";

const WRITES: [string, string][] = [
  ['INSERT OR REPLACE naming the rowid', "INSERT OR REPLACE INTO t (rowid, k, v) VALUES (1, 'c', 3);"],
  ['UPDATE OR REPLACE of the rowid', "UPDATE OR REPLACE t SET rowid = 1 WHERE k = 'b';"],
];

for (const [what, sql] of WRITES) {
  for (const writer of ['python', 'sqlite3 shell'] as const) {
    test(`${what} from ${writer}: the mirror is active only with the source's rows`, async ({ makeDb, tmp }) => {
      const { db, file } = makeDb('source.db', SCHEMA);
      enable(db, ['t']);
      pythonExec(file, SEED);
      const target = path.join(tmp, 'target.db');
      await sync(file, target, { projections: [{ name: 't', source: 't', kind: 'mirror' }] });
      if (writer === 'python') pythonExec(file, sql);
      else runSqliteCli(file, sql);
      const r = await sync(file, target);
      const t = openDatabase(target);
      const rows = tableCells(t, 'main', 't');
      t.close();
      const source = tableCells(db, 'main', 't');
      expect(source).toHaveLength(what.startsWith('INSERT') ? 2 : 1);
      expect({ state: r.projections[0]?.state, rows }).toEqual({ state: 'active', rows: source });
    });
  }
}
