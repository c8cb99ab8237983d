// a replace on a table whose key index collation differs from its column collation journals every row it deletes
import { test, expect } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { pythonExec } from '../support/journal.ts';
import { replayAndSource } from './support/replay-journal.ts';

/*
 * `k TEXT COLLATE NOCASE, PRIMARY KEY (k COLLATE BINARY)`: 'abc' and 'ABC'
 * are two rows. A REPLACE (Python's sqlite3, recursive_triggers off) through
 * another UNIQUE index deletes 'abc'; the flush trigger's "row is gone" test
 * compares `r.k = p.c0` with the column's NOCASE collation, finds 'ABC', and
 * journals nothing: the changes stream keeps a row the source lost.
 */

const SCHEMA = 'CREATE TABLE t (k TEXT COLLATE NOCASE NOT NULL, u, PRIMARY KEY (k COLLATE BINARY), UNIQUE (u))';

for (const rowid of ['', ' WITHOUT ROWID']) {
  test(`a REPLACE through a UNIQUE column deleting 'abc' while 'ABC' exists journals the delete (${rowid === '' ? 'rowid table' : 'WITHOUT ROWID'})`, ({
    makeDb,
  }) => {
    const { db, file } = makeDb('s.db', SCHEMA + rowid);
    enable(db, ['t']);
    pythonExec(file, "INSERT INTO t VALUES ('abc', 1), ('ABC', 2); INSERT OR REPLACE INTO t VALUES ('zzz', 1);");
    const r = replayAndSource(db, 't');
    expect(r.source).toHaveLength(2);
    expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
  });
}

test("a REPLACE conflicting with ('a','x') on the key and ('A','X') on a BINARY UNIQUE index over NOCASE columns journals both deletes", ({
  makeDb,
}) => {
  // The guard's UNION of notes compares images with the columns' NOCASE collation: the two rows collapse into one note.
  const { db, file } = makeDb(
    's.db',
    'CREATE TABLE t (k TEXT COLLATE NOCASE NOT NULL, j TEXT COLLATE NOCASE, PRIMARY KEY (k COLLATE BINARY), UNIQUE (j COLLATE BINARY))',
  );
  enable(db, ['t']);
  pythonExec(file, "INSERT INTO t VALUES ('a', 'x'), ('A', 'X'); INSERT OR REPLACE INTO t VALUES ('a', 'X');");
  const r = replayAndSource(db, 't');
  expect(r.source).toHaveLength(1);
  expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
});
