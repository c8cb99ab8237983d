import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { journalEvents, pythonExec, rowCells, cell, type JournalEvent } from '../support/journal.ts';
import type { Db } from '../../src/sqlite/index.ts';

/* Statement forms whose row changes reach triggers in less obvious ways. */

type MakeDb = (name?: string, schema?: string) => { db: Db; file: string };

const brief = (events: readonly JournalEvent[]) => events.map((e) => [e.table, e.op, e.before, e.after]);
const row = (...cells: string[]) => cells;

describe('INSERT ... ON CONFLICT', () => {
  test('DO UPDATE on a conflict is one update event; without a conflict it is an insert; DO NOTHING is nothing', ({ makeDb }) => {
    const { db } = makeDb('u.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v, hits INTEGER NOT NULL DEFAULT 0)');
    enable(db, ['t']);
    const upsert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v, hits = hits + 1');
    upsert.run(1, 'a');
    upsert.run(1, 'b');
    db.prepare("INSERT INTO t (id, v) VALUES (1, 'c') ON CONFLICT DO NOTHING").run();
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'insert', undefined, row(cell.int(1), cell.text('a'), cell.int(0))],
      ['t', 'update', row(cell.int(1), cell.text('a'), cell.int(0)), row(cell.int(1), cell.text('b'), cell.int(1))],
    ]);
  });
});

describe('INSERT OR REPLACE', () => {
  const SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, v, u UNIQUE); INSERT INTO t VALUES (1, 'old', 'u1'), (2, 'other', 'u2');";

  test('with recursive_triggers ON (sluice connections) the replaced row is journaled as a delete before the insert', ({ makeDb }) => {
    const { db } = makeDb('r.db', SCHEMA);
    enable(db, ['t']);
    expect(db.pragma('recursive_triggers', { simple: true })).toBe(1n);
    db.exec("INSERT OR REPLACE INTO t VALUES (1, 'new', 'u1')");
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'delete', row(cell.int(1), cell.text('old'), cell.text('u1')), undefined],
      ['t', 'insert', undefined, row(cell.int(1), cell.text('new'), cell.text('u1'))],
    ]);
  });

  test('with recursive_triggers ON a REPLACE that removes a row of another key through a UNIQUE column journals that delete too', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('r.db', SCHEMA);
    enable(db, ['t']);
    pythonExec(file, "REPLACE INTO t VALUES (3, 'new', 'u2')", ['PRAGMA recursive_triggers = ON']);
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'delete', row(cell.int(2), cell.text('other'), cell.text('u2')), undefined],
      ['t', 'insert', undefined, row(cell.int(3), cell.text('new'), cell.text('u2'))],
    ]);
  });

  test('with recursive_triggers OFF (Python default) a key REPLACE on a table with a UNIQUE index journals the old row as a delete before the insert', ({
    makeDb,
  }) => {
    // SQLite fires no delete trigger for REPLACE's implicit delete when
    // recursive_triggers is off; the BEFORE guard notes the row and the
    // AFTER trigger journals it, ahead of the insert.
    const { db, file } = makeDb('r.db', SCHEMA);
    enable(db, ['t']);
    const out = runPython(
      `
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
print(conn.execute('PRAGMA recursive_triggers').fetchone()[0])
conn.execute("INSERT OR REPLACE INTO t VALUES (1, 'new', 'u1')")
conn.commit()
`,
      [file],
    );
    expect(out.trim()).toBe('0');
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'delete', row(cell.int(1), cell.text('old'), cell.text('u1')), undefined],
      ['t', 'insert', undefined, row(cell.int(1), cell.text('new'), cell.text('u1'))],
    ]);
  });

  test('with recursive_triggers OFF a REPLACE through a UNIQUE column journals the removed key as a delete', ({ makeDb }) => {
    const { db, file } = makeDb('r.db', SCHEMA);
    enable(db, ['t']);
    pythonExec(file, "REPLACE INTO t VALUES (3, 'new', 'u2')");
    expect(rowCells(db, 't', 'id = 2')).toBeUndefined();
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'delete', row(cell.int(2), cell.text('other'), cell.text('u2')), undefined],
      ['t', 'insert', undefined, row(cell.int(3), cell.text('new'), cell.text('u2'))],
    ]);
  });

  test('with recursive_triggers OFF, OR IGNORE, DO NOTHING and DO UPDATE on a UNIQUE conflict journal no delete', ({ makeDb }) => {
    const { db, file } = makeDb('r.db', SCHEMA);
    enable(db, ['t']);
    pythonExec(file, "INSERT OR IGNORE INTO t VALUES (5, 'x', 'u1')");
    pythonExec(file, "INSERT INTO t VALUES (6, 'x', 'u2') ON CONFLICT DO NOTHING");
    pythonExec(file, "INSERT INTO t VALUES (7, 'x', 'u2') ON CONFLICT (u) DO UPDATE SET v = 'bumped'");
    pythonExec(file, "INSERT INTO t VALUES (8, 'fresh', 'u8')");
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'update', row(cell.int(2), cell.text('other'), cell.text('u2')), row(cell.int(2), cell.text('bumped'), cell.text('u2'))],
      ['t', 'insert', undefined, row(cell.int(8), cell.text('fresh'), cell.text('u8'))],
    ]);
  });

  test("with recursive_triggers OFF, UPDATE OR REPLACE onto another row's UNIQUE value journals that row as a delete first", ({
    makeDb,
  }) => {
    const { db, file } = makeDb('r.db', SCHEMA);
    enable(db, ['t']);
    pythonExec(file, "UPDATE OR REPLACE t SET u = 'u2' WHERE id = 1");
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'delete', row(cell.int(2), cell.text('other'), cell.text('u2')), undefined],
      ['t', 'update', row(cell.int(1), cell.text('old'), cell.text('u1')), row(cell.int(1), cell.text('old'), cell.text('u2'))],
    ]);
  });

  test('with recursive_triggers OFF, a key REPLACE on a table whose only unique key is the primary key journals the replaced row as a delete first', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('r.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'old');");
    enable(db, ['t']);
    pythonExec(file, "INSERT OR REPLACE INTO t VALUES (1, 'new')");
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'delete', row(cell.int(1), cell.text('old')), undefined],
      ['t', 'insert', undefined, row(cell.int(1), cell.text('new'))],
    ]);
  });

  test('a key REPLACE journals the same events with recursive_triggers on and off, on TEXT, NOCASE, composite and WITHOUT ROWID keys', ({
    makeDb,
  }) => {
    const schemas = [
      "CREATE TABLE t (k TEXT PRIMARY KEY, v); INSERT INTO t VALUES ('a', 'old');",
      "CREATE TABLE t (k TEXT COLLATE NOCASE PRIMARY KEY, v); INSERT INTO t VALUES ('a', 'old');",
      "CREATE TABLE t (a INTEGER, b TEXT, v, PRIMARY KEY (a, b)); INSERT INTO t VALUES (1, 'a', 'old');",
      "CREATE TABLE t (k TEXT PRIMARY KEY, v) WITHOUT ROWID; INSERT INTO t VALUES ('a', 'old');",
    ];
    for (const [i, schema] of schemas.entries()) {
      const off = makeDb(`off${i}.db`, schema);
      const on = makeDb(`on${i}.db`, schema);
      enable(off.db, ['t']);
      enable(on.db, ['t']);
      const write = schema.includes('(a, b)')
        ? "INSERT OR REPLACE INTO t VALUES (1, 'a', 'new')"
        : i === 1
          ? "INSERT OR REPLACE INTO t VALUES ('A', 'new')"
          : "INSERT OR REPLACE INTO t VALUES ('a', 'new')";
      pythonExec(off.file, write);
      on.db.exec(write); // sluice's own connection: recursive_triggers on
      const events = brief(journalEvents(off.db));
      expect(events.map((e) => e[1])).toEqual(['delete', 'insert']);
      expect(events).toEqual(brief(journalEvents(on.db)));
    }
  });

  test('with recursive_triggers OFF, REPLACE through a partial UNIQUE index journals the removed row, and only when the predicate made it conflict', ({
    makeDb,
  }) => {
    const { db, file } = makeDb(
      'p.db',
      "CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT, active INTEGER); CREATE UNIQUE INDEX t_active_email ON t (email) WHERE active = 1; INSERT INTO t VALUES (1, 'a@x', 1), (2, 'b@x', 0);",
    );
    enable(db, ['t']);
    pythonExec(file, "INSERT OR REPLACE INTO t VALUES (3, 'b@x', 1)"); // 2 is inactive: no conflict
    pythonExec(file, "INSERT OR REPLACE INTO t VALUES (4, 'a@x', 1)"); // replaces 1
    pythonExec(file, 'UPDATE OR REPLACE t SET active = 1 WHERE id = 2'); // enters the index onto 3's email: replaces 3
    expect(db.prepare('SELECT id FROM t ORDER BY id').pluck().all()).toEqual([2n, 4n]);
    expect(brief(journalEvents(db)).map((e) => [e[1], e[2]?.[0] ?? e[3]?.[0]])).toEqual([
      ['insert', cell.int(3)],
      ['delete', cell.int(1)],
      ['insert', cell.int(4)],
      ['delete', cell.int(3)],
      ['update', cell.int(2)],
    ]);
  });

  test('a user BEFORE INSERT trigger that deletes the conflicting row itself gives the same events whichever trigger is newer', ({
    makeDb,
  }) => {
    for (const userFirst of [true, false]) {
      const { db, file } = makeDb(
        `b${String(userFirst)}.db`,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'old');",
      );
      const userTrigger = 'CREATE TRIGGER t_upsert BEFORE INSERT ON t BEGIN DELETE FROM t WHERE id = NEW.id; END';
      if (userFirst) db.exec(userTrigger);
      enable(db, ['t']);
      if (!userFirst) db.exec(userTrigger);
      pythonExec(file, "INSERT OR REPLACE INTO t VALUES (1, 'new')");
      expect(brief(journalEvents(db))).toEqual([
        ['t', 'delete', row(cell.int(1), cell.text('old')), undefined],
        ['t', 'insert', undefined, row(cell.int(1), cell.text('new'))],
      ]);
    }
  });

  test('an IGNOREd conflict leaves no event, and its stale note never becomes a delete later', ({ makeDb }) => {
    const { db, file } = makeDb('i.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a'), (2, 'b');");
    enable(db, ['t']);
    pythonExec(file, "INSERT OR IGNORE INTO t VALUES (1, 'x')");
    pythonExec(file, 'DELETE FROM t WHERE id = 1');
    pythonExec(file, "INSERT INTO t VALUES (3, 'c')");
    pythonExec(file, "INSERT OR IGNORE INTO t VALUES (2, 'x')");
    pythonExec(file, "INSERT INTO t VALUES (1, 'again')");
    expect(brief(journalEvents(db)).map((e) => [e[1], e[2]?.[0] ?? e[3]?.[0]])).toEqual([
      ['delete', cell.int(1)],
      ['insert', cell.int(3)],
      ['insert', cell.int(1)],
    ]);
  });

  test('a row noted by an IGNOREd conflict, changed, then deleted by a REPLACE is journaled once, as the REPLACE found it', ({
    makeDb,
  }) => {
    const { db, file } = makeDb(
      's.db',
      "CREATE TABLE t (id INTEGER PRIMARY KEY, u TEXT UNIQUE, v); INSERT INTO t VALUES (1, 'a', 'v1'), (2, 'b', 'v2');",
    );
    enable(db, ['t']);
    // Each IGNOREd write leaves its notes; no insert runs between them and the REPLACE to forget them.
    pythonExec(
      file,
      "INSERT OR IGNORE INTO t VALUES (1, 'z', 'x'); UPDATE t SET v = 'v1b' WHERE id = 1; INSERT OR IGNORE INTO t VALUES (9, 'b', 'x'); UPDATE t SET v = 'v2b' WHERE id = 2; INSERT OR REPLACE INTO t VALUES (1, 'b', 'new')",
    );
    expect(brief(journalEvents(db)).map((e) => e.slice(1))).toEqual([
      ['update', row(cell.int(1), cell.text('a'), cell.text('v1')), row(cell.int(1), cell.text('a'), cell.text('v1b'))],
      ['update', row(cell.int(2), cell.text('b'), cell.text('v2')), row(cell.int(2), cell.text('b'), cell.text('v2b'))],
      ['delete', row(cell.int(1), cell.text('a'), cell.text('v1b')), undefined],
      ['delete', row(cell.int(2), cell.text('b'), cell.text('v2b')), undefined],
      ['insert', undefined, row(cell.int(1), cell.text('b'), cell.text('new'))],
    ]);
  });
});
