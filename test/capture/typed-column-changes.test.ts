// a change in a TEXT or REAL column is found without typeof: every storage class change that column can hold is an event
import { test, expect } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { journalEvents, pythonExec, rowCells } from '../support/journal.ts';

/*
 * The update trigger leaves typeof() out of the change test of a column of
 * TEXT or REAL affinity (it holds no INTEGER next to an equal REAL, the one
 * pair IS NOT calls equal). Every change such a column can hold is still an
 * event with the exact images, from better-sqlite3 and from Python, and a
 * write that stores the same value is none.
 */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT COLLATE NOCASE, r REAL, f FLOAT, c VARCHAR(9))';

test('TEXT and REAL affinity columns: class and byte changes are events, affinity-equal writes are not', ({ makeDb }) => {
  const { db, file } = makeDb('typed.db', SCHEMA);
  enable(db, ['t']);
  db.exec("INSERT INTO t VALUES (1, 'abc', 1.5, 2.0, 'x')");
  const steps: [string, boolean][] = [
    ["UPDATE t SET s = 'ABC'", true], // NOCASE-equal, other bytes
    ["UPDATE t SET s = CAST('ABC' AS BLOB)", true], // same bytes, BLOB
    ["UPDATE t SET s = 'ABC'", true], // back to TEXT
    ['UPDATE t SET s = 12', true], // stored as TEXT '12'
    ["UPDATE t SET s = '12'", false], // the same TEXT
    ['UPDATE t SET r = 2', true], // stored as REAL 2.0
    ['UPDATE t SET r = 2.0', false],
    ["UPDATE t SET r = '2'", false], // numeric text: REAL 2.0
    ["UPDATE t SET r = '2.0x'", true], // not numeric: TEXT
    ["UPDATE t SET r = CAST('2.0x' AS BLOB)", true],
    ['UPDATE t SET r = NULL', true],
    ["UPDATE t SET f = 2, c = 'x'", false],
    ["UPDATE t SET c = X'78'", true],
    ['UPDATE t SET f = -2', true],
  ];
  for (const [sql, changes] of steps) {
    const before = journalEvents(db).length;
    db.exec(sql);
    const events = journalEvents(db).slice(before);
    expect(events.length, sql).toBe(changes ? 1 : 0);
    if (changes) expect(events[0]?.after, sql).toEqual(rowCells(db, 't', 'id = 1'));
  }
  // The same from Python's sqlite3 (another SQLite build): one event each, for the two real changes.
  const before = journalEvents(db).length;
  pythonExec(file, "UPDATE t SET s = CAST(s AS BLOB); UPDATE t SET s = CAST(s AS BLOB); UPDATE t SET f = '-2'; UPDATE t SET r = 7");
  expect(
    journalEvents(db)
      .slice(before)
      .map((e) => e.op),
  ).toEqual(['update', 'update']);
});
