// an update or replace that sets the rowid of an integer primary key table by its rowid name journals the row it deletes
import path from 'node:path';
import { test, expect } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { pythonExec } from '../support/journal.ts';
import { replayAndSource } from './support/replay-journal.ts';
import { tableCells } from '../apply/support/target.ts';

/*
 * Review round 2. In `k INTEGER PRIMARY KEY` the key is the rowid, which
 * SQL also reaches as rowid, oid and _rowid_. The update guards are
 * `BEFORE UPDATE OF k` / `AFTER UPDATE OF k`: SQLite picks them by the
 * names in the SET list, and `SET rowid = 2` names none of them (the
 * hidden-rowid names are listed only for tables whose key is not the
 * rowid). So UPDATE OR REPLACE t SET rowid = 2 WHERE k = 1 (Python's
 * sqlite3, recursive_triggers off) deletes row 2 with no guard running: the
 * journal holds an update onto a key it never saw deleted.
 */

for (const name of ['rowid', 'oid', '_rowid_']) {
  test(`UPDATE OR REPLACE ... SET ${name} = 2 on an INTEGER PRIMARY KEY table journals the delete of row 2`, ({ makeDb }) => {
    const { db, file } = makeDb('s.db', 'CREATE TABLE t (k INTEGER PRIMARY KEY, v)');
    enable(db, ['t']);
    pythonExec(file, `INSERT INTO t VALUES (1, 'one'), (2, 'two'); UPDATE OR REPLACE t SET ${name} = 2 WHERE k = 1;`);
    const r = replayAndSource(db, 't');
    expect(r.source).toHaveLength(1);
    expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
  });
}

test('a mirror synced across UPDATE OR REPLACE ... SET rowid on an INTEGER PRIMARY KEY table stays active with the source rows', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb('s.db', 'CREATE TABLE t (k INTEGER PRIMARY KEY, u UNIQUE, v)');
  enable(db, ['t']);
  pythonExec(file, "INSERT INTO t VALUES (1, 'a', 'one'), (2, 'b', 'two');");
  const target = path.join(tmp, 'target.db');
  await sync(file, target, { projections: [{ name: 't', source: 't', kind: 'mirror' }] });
  pythonExec(file, 'UPDATE OR REPLACE t SET rowid = 2 WHERE k = 1;');
  const s = await sync(file, target);
  const tg = openDatabase(target);
  const rows = tableCells(tg, 'main', 't');
  tg.close();
  const p = s.projections[0];
  expect({ state: p?.state, reason: p?.state === 'suspended' ? p.reason : undefined, rows }).toEqual({
    state: 'active',
    reason: undefined,
    rows: tableCells(db, 'main', 't'),
  });
});
