// a re arm that changes a table's journal layout never journals a delete from a note of the old layout
import { test, expect } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { journalEvents, pythonExec, cell } from '../support/journal.ts';

/*
 * An INSERT OR IGNORE that conflicts leaves a note in _sluice_pending (the
 * row it would have replaced), cleared by the table's next insert. A re-arm
 * in between that changes the journal layout (images -> keys) leaves that
 * note in the old layout; the next insert's flush reads it with the new key
 * positions, finds that "key" gone and journals a delete of a key the table
 * never had.
 */

test('after an ignored conflicting insert, switching images -> keys journals the next insert and nothing else', ({ makeDb }) => {
  const { db, file } = makeDb('s.db', 'CREATE TABLE t (u TEXT UNIQUE, id INTEGER PRIMARY KEY, w)');
  enable(db, ['t']);
  pythonExec(file, "INSERT INTO t VALUES ('x', 5, 0); INSERT OR IGNORE INTO t VALUES ('x', 6, 0);");
  enable(db, ['t'], { mode: 'keys' });
  const seen = journalEvents(db).length;
  pythonExec(file, "INSERT INTO t VALUES ('n', 7, 0);");
  expect(
    journalEvents(db)
      .slice(seen)
      .map((e) => [e.op, e.before, e.after]),
  ).toEqual([['insert', undefined, [cell.int(7)]]]);
});
