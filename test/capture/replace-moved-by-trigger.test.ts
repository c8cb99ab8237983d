// a replace whose conflicting row a newer user before trigger moves to another key journals its delete
import path from 'node:path';
import { test, expect } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { pythonExec } from '../support/journal.ts';
import { replayAndSource } from './support/replay-journal.ts';
import { tableCells } from '../apply/support/target.ts';

/*
 * A user BEFORE trigger that writes the same table must be newer than
 * sluice's REPLACE guards (docs/journal.md, REPLACE: Unsupported): then it
 * fires first, and the guard sees the table as the REPLACE will find it.
 * Here the user trigger, made after enable, moves the conflicting row
 * (1, 'a') to key 5; the REPLACE of (2, 'a') (Python's sqlite3,
 * recursive_triggers off) deletes it there through u, and the change
 * stream and the mirror follow exactly. (Made before enable, so older than
 * the guards, the same trigger is unsupported: review round 2 showed the
 * delete then goes unjournaled.)
 */

const SCHEMA = 'CREATE TABLE t (k INTEGER PRIMARY KEY, u TEXT UNIQUE)';
const MOVE = 'CREATE TRIGGER mv BEFORE INSERT ON t WHEN NEW.k = 2 BEGIN UPDATE t SET k = 5 WHERE k = 1; END;';

test("a REPLACE whose conflicting row a user BEFORE INSERT trigger made after enable moves to another key journals the row's delete", async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb('s.db', SCHEMA);
  enable(db, ['t']);
  pythonExec(file, MOVE);
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
