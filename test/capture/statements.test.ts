import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { enable } from '../../src/capture/enable.ts';
import { journalEvents, pythonExec, rowCells, cell, type JournalEvent } from '../support/journal.ts';
import type { Db } from '../../src/sqlite/connection.ts';

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

  test('with recursive_triggers ON a REPLACE that removes a row of another key through a UNIQUE column journals that delete too', ({ makeDb }) => {
    const { db, file } = makeDb('r.db', SCHEMA);
    enable(db, ['t']);
    pythonExec(file, "REPLACE INTO t VALUES (3, 'new', 'u2')", ['PRAGMA recursive_triggers = ON']);
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'delete', row(cell.int(2), cell.text('other'), cell.text('u2')), undefined],
      ['t', 'insert', undefined, row(cell.int(3), cell.text('new'), cell.text('u2'))],
    ]);
  });

  test('with recursive_triggers OFF (Python default) a key REPLACE on a table with a UNIQUE index journals the old row as a delete before the insert', ({ makeDb }) => {
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

  test('with recursive_triggers OFF, UPDATE OR REPLACE onto another row\'s UNIQUE value journals that row as a delete first', ({ makeDb }) => {
    const { db, file } = makeDb('r.db', SCHEMA);
    enable(db, ['t']);
    pythonExec(file, "UPDATE OR REPLACE t SET u = 'u2' WHERE id = 1");
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'delete', row(cell.int(2), cell.text('other'), cell.text('u2')), undefined],
      ['t', 'update', row(cell.int(1), cell.text('old'), cell.text('u1')), row(cell.int(1), cell.text('old'), cell.text('u2'))],
    ]);
  });

  test('with recursive_triggers OFF, a key REPLACE on a table without UNIQUE indexes journals only the insert (the applier fails closed on it)', ({ makeDb }) => {
    const { db, file } = makeDb('r.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'old');");
    enable(db, ['t']);
    pythonExec(file, "INSERT OR REPLACE INTO t VALUES (1, 'new')");
    expect(brief(journalEvents(db))).toEqual([['t', 'insert', undefined, row(cell.int(1), cell.text('new'))]]);
  });
});

describe('UPDATE OR REPLACE', () => {
  test('moving a row onto an existing key journals the displaced row as a delete, then the key change', ({ makeDb }) => {
    const { db } = makeDb('ur.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a'), (2, 'b');");
    enable(db, ['t']);
    db.exec('UPDATE OR REPLACE t SET id = 2 WHERE id = 1');
    expect(brief(journalEvents(db))).toEqual([
      ['t', 'delete', row(cell.int(2), cell.text('b')), undefined],
      ['t', 'update', row(cell.int(1), cell.text('a')), row(cell.int(2), cell.text('a'))],
    ]);
  });
});

describe('DELETE FROM t with no WHERE', () => {
  test('journals one delete with the full image per row, from better-sqlite3 and from the sqlite3 CLI', ({ makeDb }) => {
    for (const writer of ['better-sqlite3', 'cli'] as const) {
      const { db, file } = makeDb(`${writer}.db`, 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
      const ins = db.prepare('INSERT INTO t VALUES (?, ?)');
      for (let i = 1; i <= 100; i++) ins.run(i, `v${i}`);
      enable(db, ['t']);
      // The truncate optimization skips per-row work; triggers must disable it.
      if (writer === 'cli') expect(runSqliteCli(file, 'DELETE FROM t; SELECT changes();').trim()).toBe('100');
      else expect(db.prepare('DELETE FROM t').run().changes).toBe(100);
      const events = journalEvents(db);
      expect(events, writer).toHaveLength(100);
      expect(events.every((e) => e.op === 'delete')).toBe(true);
      expect(events.map((e) => e.before)).toEqual(Array.from({ length: 100 }, (_, i) => row(cell.int(i + 1), cell.text(`v${i + 1}`))));
    }
  });
});

describe('foreign-key cascades', () => {
  const SCHEMA = `
CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE child (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL REFERENCES parent (id) ON DELETE CASCADE ON UPDATE CASCADE, v);
INSERT INTO parent VALUES (1, 'p1'), (2, 'p2');
INSERT INTO child VALUES (10, 1, 'a'), (11, 1, 'b'), (12, 2, 'c');
`;

  test('ON DELETE CASCADE with foreign_keys=ON journals the child deletes and then the parent delete', ({ makeDb }) => {
    const { db } = makeDb('fk.db', SCHEMA);
    enable(db, ['parent', 'child']);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1n);
    db.exec('DELETE FROM parent WHERE id = 1');
    const events = journalEvents(db);
    expect(brief(events)).toEqual([
      ['child', 'delete', row(cell.int(10), cell.int(1), cell.text('a')), undefined],
      ['child', 'delete', row(cell.int(11), cell.int(1), cell.text('b')), undefined],
      ['parent', 'delete', row(cell.int(1), cell.text('p1')), undefined],
    ]);
  });

  test('a Python writer with foreign_keys=ON journals the cascaded child deletes too', ({ makeDb }) => {
    const { db, file } = makeDb('fk.db', SCHEMA);
    enable(db, ['parent', 'child']);
    pythonExec(file, 'DELETE FROM parent WHERE id = 2', ['PRAGMA foreign_keys = ON']);
    expect(brief(journalEvents(db))).toEqual([
      ['child', 'delete', row(cell.int(12), cell.int(2), cell.text('c')), undefined],
      ['parent', 'delete', row(cell.int(2), cell.text('p2')), undefined],
    ]);
  });

  test('ON UPDATE CASCADE journals the parent key change and each child update, each with both images', ({ makeDb }) => {
    const { db } = makeDb('fk.db', SCHEMA);
    enable(db, ['parent', 'child']);
    db.exec('UPDATE parent SET id = 5 WHERE id = 1');
    const events = brief(journalEvents(db));
    expect(events).toHaveLength(3);
    expect(events).toEqual(
      expect.arrayContaining([
        ['parent', 'update', row(cell.int(1), cell.text('p1')), row(cell.int(5), cell.text('p1'))],
        ['child', 'update', row(cell.int(10), cell.int(1), cell.text('a')), row(cell.int(10), cell.int(5), cell.text('a'))],
        ['child', 'update', row(cell.int(11), cell.int(1), cell.text('b')), row(cell.int(11), cell.int(5), cell.text('b'))],
      ]),
    );
  });
});

describe('a self-referencing ON DELETE CASCADE tree', () => {
  test('deleting the root journals every descendant, each once, and the root last', ({ makeDb }) => {
    const { db } = makeDb(
      'tree.db',
      `CREATE TABLE node (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES node (id) ON DELETE CASCADE);
       INSERT INTO node VALUES (1, NULL), (2, 1), (3, 1), (4, 2), (5, 4), (6, NULL);`,
    );
    enable(db, ['node']);
    db.exec('DELETE FROM node WHERE id = 1');
    const events = journalEvents(db);
    expect(events.every((e) => e.op === 'delete')).toBe(true);
    expect(events.map((e) => e.before?.[0]).sort()).toEqual([1, 2, 3, 4, 5].map((i) => cell.int(i)).sort());
    expect(events.at(-1)?.before).toEqual(row(cell.int(1), cell.null()));
    expect(rowCells(db, 'node', 'id = 6')).toEqual(row(cell.int(6), cell.null()));
  });
});

describe('key changes', () => {
  test('a primary-key change is one update event carrying the before key and the after key', ({ makeDb }) => {
    const { db } = makeDb('k.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'x');");
    enable(db, ['t']);
    const info = db.prepare('UPDATE t SET id = 2 WHERE id = 1').run();
    expect(info.changes).toBe(1);
    expect(brief(journalEvents(db))).toEqual([['t', 'update', row(cell.int(1), cell.text('x')), row(cell.int(2), cell.text('x'))]]);
  });

  test('a change of one column of a composite WITHOUT ROWID key is one update event with both keys', ({ makeDb }) => {
    const { db } = makeDb('k.db', "CREATE TABLE t (a TEXT NOT NULL, b INTEGER NOT NULL, v, PRIMARY KEY (b, a)) WITHOUT ROWID; INSERT INTO t VALUES ('x', 1, 'v');");
    enable(db, ['t']);
    db.exec("UPDATE t SET a = 'y' WHERE a = 'x'");
    expect(brief(journalEvents(db))).toEqual([['t', 'update', row(cell.text('x'), cell.int(1), cell.text('v')), row(cell.text('y'), cell.int(1), cell.text('v'))]]);
  });
});
