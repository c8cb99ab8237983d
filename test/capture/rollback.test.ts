import { test, expect, describe } from '../support/fixtures.ts';
import { enable, status } from '../../src/capture/index.ts';
import { journalEvents, pythonExec, cell } from '../support/journal.ts';
import type { Db } from '../../src/sqlite/index.ts';

/* Events are written in the writer's transaction, so they share its fate. */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, v NOT NULL)';

function setUp(makeDb: (name?: string, schema?: string) => { db: Db; file: string }): { db: Db; file: string } {
  const made = makeDb('r.db', SCHEMA);
  enable(made.db, ['t']);
  made.db.exec("INSERT INTO t VALUES (1, 'kept')");
  return made;
}

const summary = (db: Db) => journalEvents(db).map((e) => `${e.seq}:${e.op}:${(e.after ?? e.before)?.[0]}`);
// The table's last seq as sluice reads it (its row of _sluice_last is a checkpoint since format 4).
const lastSeq = (db: Db) => status(db).tables.find((x) => x.name === 't')?.lastSeq ?? -1;

describe('rolled-back writes', () => {
  test('a rolled-back transaction leaves no events and does not move last_seq', ({ makeDb }) => {
    const { db } = setUp(makeDb);
    db.exec("BEGIN; INSERT INTO t VALUES (2, 'x'); UPDATE t SET v = 'y'; DELETE FROM t WHERE id = 1;");
    expect(journalEvents(db)).toHaveLength(5); // visible inside the transaction...
    db.exec('ROLLBACK');
    expect(summary(db)).toEqual([`1:insert:${cell.int(1)}`]); // ...and gone with it
    expect(lastSeq(db)).toBe(1);
    db.exec("INSERT INTO t VALUES (3, 'z')");
    expect(summary(db)).toEqual([`1:insert:${cell.int(1)}`, `2:insert:${cell.int(3)}`]);
  });

  test('a better-sqlite3 transaction function that throws leaves no events', ({ makeDb }) => {
    const { db } = setUp(makeDb);
    const tx = db.transaction(() => {
      db.prepare("INSERT INTO t VALUES (2, 'x')").run();
      throw new Error('abort');
    });
    expect(() => tx()).toThrow('abort');
    expect(summary(db)).toEqual([`1:insert:${cell.int(1)}`]);
  });

  test('ROLLBACK TO a savepoint removes exactly the events written after it', ({ makeDb }) => {
    const { db } = setUp(makeDb);
    db.exec(`
      SAVEPOINT outer_sp;
      INSERT INTO t VALUES (2, 'outer');
      SAVEPOINT inner_sp;
      INSERT INTO t VALUES (3, 'inner');
      UPDATE t SET v = 'inner' WHERE id = 2;
      ROLLBACK TO inner_sp;
      RELEASE inner_sp;
      INSERT INTO t VALUES (4, 'after');
      RELEASE outer_sp;
    `);
    expect(summary(db)).toEqual([`1:insert:${cell.int(1)}`, `2:insert:${cell.int(2)}`, `3:insert:${cell.int(4)}`]);
  });

  test('a nested better-sqlite3 transaction that throws inside a committed one leaves only the outer events', ({ makeDb }) => {
    const { db } = setUp(makeDb);
    const inner = db.transaction(() => {
      db.prepare("UPDATE t SET v = 'inner' WHERE id = 1").run();
      throw new Error('inner fails');
    });
    db.transaction(() => {
      db.prepare("INSERT INTO t VALUES (2, 'outer')").run();
      expect(() => inner()).toThrow('inner fails');
    })();
    expect(summary(db)).toEqual([`1:insert:${cell.int(1)}`, `2:insert:${cell.int(2)}`]);
  });

  test('a statement aborted by a constraint leaves no events for the rows it had already written', ({ makeDb }) => {
    const { db } = setUp(makeDb);
    // Row 2 is written (and journaled) before row 3 fails NOT NULL; ABORT undoes both.
    expect(() => db.exec("INSERT INTO t VALUES (2, 'ok'), (3, NULL)")).toThrow(/NOT NULL/);
    expect(summary(db)).toEqual([`1:insert:${cell.int(1)}`]);
  });

  test('Python rollback() and a Python savepoint rollback leave no events', ({ makeDb }) => {
    const { db, file } = setUp(makeDb);
    pythonExec(
      file,
      `BEGIN; INSERT INTO t VALUES (2, 'py'); DELETE FROM t WHERE id = 1; ROLLBACK;
       BEGIN; SAVEPOINT a; UPDATE t SET v = 'gone'; ROLLBACK TO a; INSERT INTO t VALUES (5, 'py'); COMMIT;`,
    );
    expect(summary(db)).toEqual([`1:insert:${cell.int(1)}`, `2:insert:${cell.int(5)}`]);
  });
});
