// whether the journal has its mask column is read again after DDL, on the same connection
import { test, expect, describe } from '../support/fixtures.ts';
import { openDatabase, closeDatabase } from '../../src/sqlite/index.ts';
import { journalHasMask, JOURNAL_TABLE } from '../../src/capture/index.ts';

/*
 * journalHasMask keeps its answer per connection with the schema version it
 * read it at (a follower asks for every batch). A format-2 journal, which
 * has no mask column, gains it by DDL (enable or sync upgrades it in place):
 * the connection that answered "no" before must answer "yes" after, or its
 * readers would go on treating every update as changing every column, or,
 * the other way round, read a column that is not there.
 */
describe('journalHasMask after DDL', () => {
  test('a journal that gains its mask column, and one made again without it, are each read afresh', ({ tmp }) => {
    const db = openDatabase(`${tmp}/j.db`, { create: true });
    try {
      db.exec(`CREATE TABLE ${JOURNAL_TABLE} (seq INTEGER PRIMARY KEY, tid INTEGER, op INTEGER, ts REAL, c0, c1)`);
      expect(journalHasMask(db)).toBe(false);
      expect(journalHasMask(db)).toBe(false);
      db.exec(`ALTER TABLE ${JOURNAL_TABLE} ADD COLUMN mask`);
      expect(journalHasMask(db)).toBe(true);
      db.exec(`DROP TABLE ${JOURNAL_TABLE}`);
      db.exec(`CREATE TABLE ${JOURNAL_TABLE} (seq INTEGER PRIMARY KEY, tid INTEGER, op INTEGER, ts REAL, c0, c1)`);
      expect(journalHasMask(db)).toBe(false);
    } finally {
      closeDatabase(db);
    }
  });

  test('DDL by another connection is seen too', ({ tmp }) => {
    const db = openDatabase(`${tmp}/k.db`, { create: true });
    const other = openDatabase(`${tmp}/k.db`);
    try {
      db.exec(`CREATE TABLE ${JOURNAL_TABLE} (seq INTEGER PRIMARY KEY, tid INTEGER, op INTEGER, ts REAL, c0, c1)`);
      expect(journalHasMask(db)).toBe(false);
      other.exec(`ALTER TABLE ${JOURNAL_TABLE} ADD COLUMN mask`);
      expect(journalHasMask(db)).toBe(true);
    } finally {
      closeDatabase(other);
      closeDatabase(db);
    }
  });
});
