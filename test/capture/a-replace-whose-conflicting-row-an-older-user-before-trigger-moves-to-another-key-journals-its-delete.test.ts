import path from 'node:path';
import { test, expect } from '../support/fixtures.ts';
import { enable } from '../../src/capture/enable.ts';
import { openDatabase } from '../../src/sqlite/connection.ts';
import { sync } from '../../src/apply/sync.ts';
import { pythonExec } from '../support/journal.ts';
import { replayAndSource } from './support/replay-journal.ts';
import { tableCells } from '../apply/support/target.ts';

/*
 * Review round 2. docs/journal.md: "User BEFORE triggers may be older or
 * newer: the REPLACE guards give the same events in either order." A user
 * BEFORE INSERT trigger made before `enable` is older than sluice's guard,
 * so it fires after it. Here it moves the conflicting row (1, 'a') to key
 * 5, keeping u = 'a'. The guard's note says key 1; the REPLACE of (2, 'a')
 * (Python's sqlite3, recursive_triggers off) still deletes that row, now
 * at key 5, through u. The flush sees key 1 gone but "taken off its key
 * since the note" (the journaled move) and journals nothing: the move's
 * writer journaled the move, not the delete. The changes stream and the
 * mirror keep row 5, which the source lost. With the trigger made after
 * enable (newer, fires before the guard) the same writes are exact.
 */

const SCHEMA = 'CREATE TABLE t (k INTEGER PRIMARY KEY, u TEXT UNIQUE)';
const MOVE = 'CREATE TRIGGER mv BEFORE INSERT ON t WHEN NEW.k = 2 BEGIN UPDATE t SET k = 5 WHERE k = 1; END;';

for (const order of ['before', 'after'] as const) {
  test(`a REPLACE whose conflicting row a user BEFORE INSERT trigger made ${order} enable moves to another key journals the row's delete`, async ({ makeDb, tmp }) => {
    const { db, file } = makeDb('s.db', order === 'before' ? SCHEMA + ';' + MOVE : SCHEMA);
    enable(db, ['t']);
    if (order === 'after') pythonExec(file, MOVE);
    pythonExec(file, "INSERT INTO t VALUES (1, 'a'), (3, 'c');");
    const target = path.join(tmp, 'target.db');
    await sync(file, target, { projections: [{ name: 't', source: 't', kind: 'mirror' }] });
    pythonExec(file, "INSERT OR REPLACE INTO t VALUES (2, 'a');");
    const r = replayAndSource(db, 't');
    expect(r.source).toHaveLength(2);
    expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
    const s = await sync(file, target);
    const tg = openDatabase(target);
    const rows = tableCells(tg, 'main', 't');
    tg.close();
    expect(s.projections[0]?.state === 'active' ? rows : 'not active').toEqual(tableCells(db, 'main', 't'));
  });
}

test('a REPLACE whose conflicting row an older user BEFORE UPDATE trigger moves to another key journals the row\'s delete', ({ makeDb }) => {
  const { db, file } = makeDb('s.db', 'CREATE TABLE t (k INTEGER PRIMARY KEY, u TEXT UNIQUE, v); CREATE TRIGGER mv BEFORE UPDATE OF v ON t WHEN NEW.k = 2 BEGIN UPDATE t SET k = k + 10 WHERE k = 1; END;');
  enable(db, ['t']);
  pythonExec(file, "INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0); UPDATE OR REPLACE t SET u = 'a', v = 1 WHERE k = 2;");
  const r = replayAndSource(db, 't');
  expect(r.source).toHaveLength(1);
  expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
});

test('a REPLACE that conflicts only after an older user BEFORE INSERT trigger gave another row the UNIQUE value journals that row\'s delete', ({ makeDb }) => {
  // The guard fires first and finds no conflict (no one holds 'b' yet), so
  // it notes nothing; the user trigger then gives row 3 u = 'b', and the
  // REPLACE deletes row 3 with no note to flush.
  const { db, file } = makeDb('s.db', "CREATE TABLE t (k INTEGER PRIMARY KEY, u TEXT UNIQUE); CREATE TRIGGER claim BEFORE INSERT ON t WHEN NEW.k = 2 BEGIN UPDATE t SET u = NEW.u WHERE k = 3; END;");
  enable(db, ['t']);
  pythonExec(file, "INSERT INTO t VALUES (1, 'a'), (3, 'c'); INSERT OR REPLACE INTO t VALUES (2, 'b');");
  const r = replayAndSource(db, 't');
  expect(r.source).toHaveLength(2);
  expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
});
