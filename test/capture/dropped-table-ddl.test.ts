// a captured table dropped leaves no sluice object that names it, so later DDL in the file still works
import { test, expect, runSqliteCli } from '../support/fixtures.ts';
import { enable, verifyCapture } from '../../src/capture/index.ts';

/*
 * SQLite checks every trigger and view of the file before an ALTER TABLE
 * ... RENAME (of any table) and refuses it when one names a table that does
 * not exist ("error in trigger X: no such table"). Sluice's per-table work
 * therefore stays in triggers on the table itself (dropped with it); its
 * objects elsewhere (the flush view's triggers, the tick) name only its own
 * tables. Then a captured table dropped (or made again by a migration:
 * CREATE new, copy, DROP old, RENAME new) leaves the file's DDL working.
 */

test('a dropped captured table (images and keys, with REPLACE guards) leaves every later ALTER TABLE ... RENAME working, from the sqlite3 shell', ({
  makeDb,
}) => {
  const { db, file } = makeDb(
    'app.db',
    `CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT UNIQUE, name TEXT);
     CREATE TABLE tags (name TEXT PRIMARY KEY, hits INTEGER);
     CREATE TABLE other (x);
     INSERT INTO users VALUES (1, 'a@x', 'Ann');`,
  );
  enable(db, ['users']);
  enable(db, ['tags'], { mode: 'keys' });
  // A migration's rebuild of a captured table, then both tables dropped, then unrelated renames.
  runSqliteCli(
    file,
    `BEGIN; CREATE TABLE users_new (id INTEGER PRIMARY KEY, email TEXT UNIQUE, name TEXT); INSERT INTO users_new SELECT * FROM users; DROP TABLE users; ALTER TABLE users_new RENAME TO users; COMMIT;
     DROP TABLE users; DROP TABLE tags;
     ALTER TABLE other RENAME TO other2; ALTER TABLE other2 RENAME COLUMN x TO y; ALTER TABLE other2 ADD COLUMN z;`,
  );
  expect(db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'other2'").pluck().get()).toBe('CREATE TABLE "other2" (y, z)');
  expect(verifyCapture(db).tables.map((t) => [t.table.name, t.reason])).toEqual([
    ['users', 'TABLE_MISSING'],
    ['tags', 'TABLE_MISSING'],
  ]);
});
