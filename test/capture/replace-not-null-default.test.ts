// a REPLACE whose NULL a NOT NULL column's DEFAULT takes the place of journals the row that default deletes
import { test, expect } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { pythonExec } from '../support/journal.ts';
import { replayAndSource } from './support/replay-journal.ts';

/*
 * Under REPLACE, a NULL written to a NOT NULL column with a DEFAULT is
 * replaced by the default (SQLite's NOT NULL conflict rule), after the BEFORE
 * triggers ran. The guard saw NEW.u IS NULL, noted nothing, and the row the
 * default then collided with on a UNIQUE index (or on the key) was deleted
 * with no event (Python's sqlite3, recursive_triggers off).
 */

const cases: { name: string; schema: string; sql: string; rows: number }[] = [
  {
    name: 'INSERT OR REPLACE of NULL into a UNIQUE NOT NULL DEFAULT column',
    schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, u TEXT NOT NULL DEFAULT 'a' UNIQUE, v)",
    sql: "INSERT INTO t VALUES (1, 'a', 'v1'), (2, 'b', 'v2'); INSERT OR REPLACE INTO t VALUES (5, NULL, 'x');",
    rows: 2,
  },
  {
    name: 'UPDATE OR REPLACE setting a UNIQUE NOT NULL DEFAULT column to NULL',
    schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, u TEXT NOT NULL DEFAULT 'a' UNIQUE, v)",
    sql: "INSERT INTO t VALUES (1, 'a', 'v1'), (2, 'b', 'v2'); UPDATE OR REPLACE t SET u = NULL WHERE id = 2;",
    rows: 1,
  },
  {
    name: 'a plain INSERT of NULL into a column declared NOT NULL ON CONFLICT REPLACE, WITHOUT ROWID',
    schema:
      "CREATE TABLE t (id TEXT PRIMARY KEY, u TEXT NOT NULL ON CONFLICT REPLACE DEFAULT (lower('A')), v, UNIQUE (u) ON CONFLICT REPLACE) WITHOUT ROWID",
    sql: "INSERT INTO t VALUES ('k1', 'a', 'v1'), ('k2', 'b', 'v2'); INSERT INTO t VALUES ('k5', NULL, 'x');",
    rows: 2,
  },
  {
    name: 'INSERT OR REPLACE of NULL into a NOT NULL DEFAULT primary key',
    schema: "CREATE TABLE t (id TEXT NOT NULL DEFAULT 'k1' PRIMARY KEY, u TEXT UNIQUE, v) WITHOUT ROWID",
    sql: "INSERT INTO t VALUES ('k1', 'a', 'v1'), ('k2', 'b', 'v2'); INSERT OR REPLACE INTO t VALUES (NULL, 'q', 'x');",
    rows: 2,
  },
];

for (const c of cases) {
  test(`${c.name} journals the row the default deleted`, ({ makeDb }) => {
    const { db, file } = makeDb('s.db', c.schema);
    enable(db, ['t']);
    pythonExec(file, c.sql);
    const r = replayAndSource(db, 't');
    expect(r.source).toHaveLength(c.rows);
    expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
  });
}

test('every spelling of a DEFAULT is looked up as the value SQLite writes (a bare or quoted identifier is a string)', ({ makeDb }) => {
  const defaults = ['abc', '"abc"', '[abc]', '`abc`', "'abc'", "(lower('ABC'))", "('ab' || 'c')"];
  for (const [i, d] of defaults.entries()) {
    const { db, file } = makeDb(`d${i}.db`, `CREATE TABLE t (id INTEGER PRIMARY KEY, abcd TEXT, u TEXT NOT NULL DEFAULT ${d} UNIQUE)`);
    enable(db, ['t']);
    pythonExec(file, "INSERT INTO t VALUES (1, 'x', 'abc'), (2, 'y', 'b'); INSERT OR REPLACE INTO t VALUES (3, 'z', NULL);");
    const r = replayAndSource(db, 't');
    expect(r.source, d).toHaveLength(2);
    expect({ d, rows: r.model, problems: r.problems }).toEqual({ d, rows: r.source, problems: [] });
  }
});

test("a DEFAULT string literal holding an identifier's quote character ('[]', 'a\"b', 'a[b') is looked up too, on a UNIQUE column and on a WITHOUT ROWID key", ({
  makeDb,
}) => {
  for (const [i, d] of ["'[]'", "'a\"b'", "'it''s `x`'"].entries()) {
    const value = d.slice(1, -1).replace(/''/g, "'");
    const { db, file } = makeDb(`q${i}.db`, `CREATE TABLE t (id INTEGER PRIMARY KEY, u TEXT NOT NULL DEFAULT ${d} UNIQUE)`);
    enable(db, ['t']);
    db.prepare('INSERT INTO t VALUES (1, ?), (2, ?)').run(value, 'other');
    pythonExec(file, 'INSERT OR REPLACE INTO t (id, u) VALUES (9, NULL);');
    const r = replayAndSource(db, 't');
    expect(r.source, d).toHaveLength(2);
    expect({ d, rows: r.model, problems: r.problems }).toEqual({ d, rows: r.source, problems: [] });
  }
  const { db, file } = makeDb('key.db', "CREATE TABLE t (k TEXT NOT NULL DEFAULT 'a[b' PRIMARY KEY, v) WITHOUT ROWID");
  enable(db, ['t']);
  pythonExec(file, "INSERT INTO t VALUES ('a[b', 1), ('c', 2); INSERT OR REPLACE INTO t VALUES (NULL, 3);");
  const r = replayAndSource(db, 't');
  expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
});
