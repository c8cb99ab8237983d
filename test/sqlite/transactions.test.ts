// transactions nest as savepoints roll back what failed and never leave a connection inside one
import { test, expect, describe } from '../support/fixtures.ts';
import {
  openDatabase,
  type Db,
  beginHeld,
  commitHeld,
  readSession,
  rollbackOpen,
  withReadTransaction,
  writeAlone,
  writeTransaction,
  writeTransactionSync,
} from '../../src/sqlite/index.ts';

const rows = (db: Db): bigint[] => db.prepare('SELECT v FROM t ORDER BY v').pluck().all() as bigint[];

describe('the transaction module', () => {
  test('a write transaction opened inside another is a savepoint: its throw undoes only its own writes, and the outer one commits', async ({
    makeDb,
  }) => {
    const { db } = makeDb('a.db', 'CREATE TABLE t (v INTEGER PRIMARY KEY)');
    await writeTransaction(db, async () => {
      db.prepare('INSERT INTO t VALUES (1)').run();
      await expect(
        writeTransaction(db, async () => {
          db.prepare('INSERT INTO t VALUES (2)').run();
          await Promise.resolve(); // a custom handler awaits inside the transaction
          throw new Error('handler failed');
        }),
      ).rejects.toThrow('handler failed');
      expect(db.inTransaction).toBe(true);
      db.prepare('INSERT INTO t VALUES (3)').run();
    });
    expect(db.inTransaction).toBe(false);
    expect(rows(db)).toEqual([1n, 3n]);
  });

  test('a result that keep refuses is rolled back and returned; onRollback runs after the rollback of a throw only', async ({ makeDb }) => {
    const { db } = makeDb('b.db', 'CREATE TABLE t (v INTEGER PRIMARY KEY)');
    const rolledBack: string[] = [];
    const out = await writeTransaction(
      db,
      () => {
        db.prepare('INSERT INTO t VALUES (1)').run();
        return { kind: 'suspended' };
      },
      { keep: (r) => r.kind !== 'suspended', onRollback: () => rolledBack.push('refused') },
    );
    expect(out).toEqual({ kind: 'suspended' });
    expect(rows(db)).toEqual([]);
    expect(rolledBack).toEqual([]);
    expect(() =>
      writeTransactionSync(
        db,
        () => {
          db.prepare('INSERT INTO t VALUES (1)').run();
          throw new Error('boom');
        },
        { onRollback: () => rolledBack.push(`thrown, in a transaction: ${db.inTransaction}`) },
      ),
    ).toThrow('boom');
    expect(rolledBack).toEqual(['thrown, in a transaction: false']);
    expect(rows(db)).toEqual([]);
  });

  test('a transaction a conflict clause ended is not rolled back again: the conflict is the error that propagates', ({ makeDb }) => {
    const { db } = makeDb('c.db', 'CREATE TABLE t (v INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);');
    expect(() =>
      writeTransactionSync(db, () => {
        db.prepare('INSERT INTO t VALUES (2)').run();
        db.prepare('INSERT OR ROLLBACK INTO t VALUES (1)').run();
      }),
    ).toThrow(/UNIQUE constraint failed/);
    expect(db.inTransaction).toBe(false);
    expect(rows(db)).toEqual([1n]);
  });

  test('a COMMIT that fails (a deferred foreign key) is rolled back before its error propagates: the connection is left in no transaction', async ({
    makeDb,
  }) => {
    const { db } = makeDb(
      'd.db',
      'PRAGMA foreign_keys = ON; CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE t (v INTEGER PRIMARY KEY REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);',
    );
    const rolledBack: string[] = [];
    await expect(
      writeTransaction(db, () => db.prepare('INSERT INTO t VALUES (7)').run(), { onRollback: () => rolledBack.push('after commit') }),
    ).rejects.toThrow(/FOREIGN KEY constraint failed/);
    expect(db.inTransaction).toBe(false);
    expect(rolledBack).toEqual(['after commit']);
    // The next transaction is one of its own, not a savepoint of a transaction nobody ends.
    await writeTransaction(db, () => db.prepare('INSERT INTO parent VALUES (1)').run());
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT count(*) FROM parent').pluck().get()).toBe(1n);
  });

  test('savepoint names are counted per connection, so bodies awaiting on two connections at once each undo their own', async ({
    makeDb,
  }) => {
    const { db: a } = makeDb('e.db', 'CREATE TABLE t (v INTEGER PRIMARY KEY)');
    const { db: b } = makeDb('f.db', 'CREATE TABLE t (v INTEGER PRIMARY KEY)');
    const nested = (db: Db, v: number, fail: boolean) =>
      writeTransaction(db, async () => {
        db.prepare('INSERT INTO t VALUES (?)').run(v);
        await writeTransaction(
          db,
          async () => {
            db.prepare('INSERT INTO t VALUES (?)').run(v + 1);
            await new Promise((resolve) => setTimeout(resolve, 5));
            return fail ? 'undo' : 'keep';
          },
          { keep: (r) => r === 'keep' },
        );
      });
    await Promise.all([nested(a, 10, true), nested(b, 20, false)]);
    expect(rows(a)).toEqual([10n]);
    expect(rows(b)).toEqual([20n, 21n]);
  });

  test('a read transaction sees one snapshot while another connection commits, and joins an open transaction', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', 'CREATE TABLE t (v INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);');
    const other = openDatabase(file);
    try {
      const seen = withReadTransaction(db, () => {
        const before = rows(db);
        other.prepare('INSERT INTO t VALUES (2)').run();
        return [before, rows(db)];
      });
      expect(seen).toEqual([[1n], [1n]]);
      expect(db.inTransaction).toBe(false);
      expect(rows(db)).toEqual([1n, 2n]);
      writeTransactionSync(db, () => {
        db.prepare('INSERT INTO t VALUES (3)').run();
        expect(withReadTransaction(db, () => rows(db))).toEqual([1n, 2n, 3n]);
      });
    } finally {
      other.close();
    }
  });

  test('a read session holds one snapshot across awaits and always ends rolled back, even when its body throws', async ({ makeDb }) => {
    const { db, file } = makeDb('h.db', 'CREATE TABLE t (v INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);');
    const other = openDatabase(file);
    try {
      const seen = await readSession(db, async () => {
        const before = rows(db);
        other.prepare('INSERT INTO t VALUES (2)').run();
        await new Promise((resolve) => setTimeout(resolve, 1));
        return [before, rows(db)];
      });
      expect(seen).toEqual([[1n], [1n]]);
      expect(db.inTransaction).toBe(false);
      await expect(
        readSession(db, () => {
          throw new Error('unreadable');
        }),
      ).rejects.toThrow('unreadable');
      expect(db.inTransaction).toBe(false);
    } finally {
      other.close();
    }
  });

  test('a write made alone reports whether it committed, and a failed one leaves nothing open', ({ makeDb }) => {
    const { db } = makeDb('i.db', 'CREATE TABLE t (v INTEGER PRIMARY KEY)');
    expect(writeAlone(db, () => db.prepare('INSERT INTO t VALUES (1)').run())).toBe(true);
    expect(
      writeAlone(db, () => {
        db.prepare('INSERT INTO t VALUES (2)').run();
        db.prepare('INSERT INTO t VALUES (1)').run();
      }),
    ).toBe(false);
    expect(db.inTransaction).toBe(false);
    expect(rows(db)).toEqual([1n]);
  });

  test('a held immediate transaction keeps the write lock across calls until it is committed or rolled back', ({ makeDb }) => {
    const { db, file } = makeDb('j.db', 'CREATE TABLE t (v INTEGER PRIMARY KEY)');
    const other = openDatabase(file, { busyTimeoutMs: 0 });
    try {
      beginHeld(db, 'immediate');
      db.prepare('INSERT INTO t VALUES (1)').run();
      expect(() => other.prepare('INSERT INTO t VALUES (9)').run()).toThrow(/database is locked/);
      commitHeld(db);
      expect(db.inTransaction).toBe(false);
      beginHeld(db, 'immediate');
      db.prepare('INSERT INTO t VALUES (2)').run();
      rollbackOpen(db);
      rollbackOpen(db); // nothing open: nothing to do
      expect(rows(other)).toEqual([1n]);
      other.prepare('INSERT INTO t VALUES (9)').run();
      commitHeld(db); // nothing open: nothing to do
      expect(rows(db)).toEqual([1n, 9n]);
    } finally {
      other.close();
    }
  });
});
