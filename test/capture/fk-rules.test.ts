import { test, expect, describe } from '../support/fixtures.ts';
import { enable, status, verifyCapture, checkForeignKeyRules } from '../../src/capture/index.ts';
import { CaptureRefusedError } from '../../src/errors.ts';
import { databaseImage } from '../support/journal.ts';
import type { Db } from '../../src/sqlite/index.ts';

/*
 * Contract 002's foreign-key boundaries. Rejected: an ON UPDATE
 * CASCADE/SET NULL/SET DEFAULT cycle back to a captured table
 * (FK_UPDATE_CYCLE), and a path from a delete of a captured table back to
 * an update of one of its key columns (FK_DELETE_KEY_UPDATE). Both follow
 * uncaptured tables. Everything else is accepted.
 */

function refuse(db: Db, file: string, tables: readonly string[], code: string, table: string, via: readonly string[]): void {
  const before = databaseImage(db, file);
  let caught: unknown;
  try {
    enable(db, tables);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(CaptureRefusedError);
  const err = caught as CaptureRefusedError;
  expect({ code: err.code, table: err.table }).toEqual({ code, table });
  expect(err.message).toContain(`Table ${table}`);
  expect(err.message).toContain('Fix:');
  for (const step of via) expect(err.message).toContain(step);
  expect(databaseImage(db, file)).toEqual(before);
}

const ACCEPTED: readonly [string, string, readonly string[]][] = [
  [
    'an acyclic chain of ON UPDATE/ON DELETE CASCADE',
    `CREATE TABLE a (id INTEGER PRIMARY KEY);
     CREATE TABLE b (id INTEGER PRIMARY KEY, a_id REFERENCES a (id) ON UPDATE CASCADE ON DELETE CASCADE);
     CREATE TABLE c (b_id NOT NULL REFERENCES b (id) ON UPDATE CASCADE ON DELETE CASCADE, n INTEGER NOT NULL, PRIMARY KEY (b_id, n));`,
    ['a', 'b', 'c'],
  ],
  [
    'a cycle whose update actions are NO ACTION and RESTRICT',
    `CREATE TABLE a (id INTEGER PRIMARY KEY, b_id REFERENCES b (id) ON UPDATE RESTRICT);
     CREATE TABLE b (id INTEGER PRIMARY KEY, a_id REFERENCES a (id) ON UPDATE CASCADE);`,
    ['a', 'b'],
  ],
  [
    'a pure ON DELETE CASCADE cycle',
    `CREATE TABLE a (id INTEGER PRIMARY KEY, b_id REFERENCES b (id) ON DELETE CASCADE);
     CREATE TABLE b (id INTEGER PRIMARY KEY, a_id REFERENCES a (id) ON DELETE CASCADE);`,
    ['a', 'b'],
  ],
  [
    'a self-reference that deletes by cascade',
    'CREATE TABLE tree (id INTEGER PRIMARY KEY, parent REFERENCES tree (id) ON DELETE CASCADE);',
    ['tree'],
  ],
  [
    'a non-key self-reference set to NULL on delete',
    'CREATE TABLE tree (id INTEGER PRIMARY KEY, parent REFERENCES tree (id) ON DELETE SET NULL);',
    ['tree'],
  ],
  [
    'ON DELETE SET NULL into a key column of another captured table (the path does not return to its start)',
    `CREATE TABLE p (id INTEGER PRIMARY KEY);
     CREATE TABLE c (pid INTEGER REFERENCES p (id) ON DELETE SET NULL, n INTEGER NOT NULL, PRIMARY KEY (n, pid)) WITHOUT ROWID;`,
    ['p'],
  ],
];

describe('foreign-key rules: accepted', () => {
  for (const [what, ddl, tables] of ACCEPTED) {
    test(`${what} is not rejected`, ({ makeDb }) => {
      const { db } = makeDb('ok.db', ddl);
      expect(checkForeignKeyRules(db, tables)).toEqual([]);
      enable(db, tables);
      expect(verifyCapture(db).ok).toBe(true);
    });
  }
});

describe('foreign-key rules: FK_UPDATE_CYCLE', () => {
  test('a self-reference with ON UPDATE CASCADE is refused', ({ makeDb }) => {
    const { db, file } = makeDb('c.db', 'CREATE TABLE node (id INTEGER PRIMARY KEY, parent REFERENCES node (id) ON UPDATE CASCADE);');
    refuse(db, file, ['node'], 'FK_UPDATE_CYCLE', 'node', ['node -> node']);
  });

  test('a two-table ON UPDATE CASCADE / SET NULL cycle is refused for either table', ({ makeDb }) => {
    const { db, file } = makeDb(
      'c.db',
      `CREATE TABLE a (id INTEGER PRIMARY KEY, b_id REFERENCES b (id) ON UPDATE SET NULL);
       CREATE TABLE b (id INTEGER PRIMARY KEY, a_id REFERENCES a (id) ON UPDATE CASCADE);`,
    );
    refuse(db, file, ['a'], 'FK_UPDATE_CYCLE', 'a', ['a -> b -> a']);
    refuse(db, file, ['b'], 'FK_UPDATE_CYCLE', 'b', ['b -> a -> b']);
  });

  test('a cycle through an uncaptured intermediate table, with ON UPDATE SET DEFAULT, is refused', ({ makeDb }) => {
    const { db, file } = makeDb(
      'c.db',
      `CREATE TABLE a (id INTEGER PRIMARY KEY, c_id INTEGER DEFAULT 0 REFERENCES c (id) ON UPDATE SET DEFAULT);
       CREATE TABLE b (id INTEGER PRIMARY KEY, a_id REFERENCES a (id) ON UPDATE CASCADE);
       CREATE TABLE c (id INTEGER PRIMARY KEY, b_id REFERENCES b (id) ON UPDATE CASCADE);`,
    );
    refuse(db, file, ['a'], 'FK_UPDATE_CYCLE', 'a', ['a -> b -> c -> a']);
  });
});

describe('foreign-key rules read the main schema only', () => {
  test('a TEMP table shadowing the uncaptured intermediate table cannot hide an update cycle', ({ makeDb }) => {
    const { db, file } = makeDb(
      'c.db',
      `CREATE TABLE a (id INTEGER PRIMARY KEY, u_id REFERENCES u (id) ON UPDATE CASCADE);
       CREATE TABLE u (id INTEGER PRIMARY KEY, a_id REFERENCES a (id) ON UPDATE CASCADE);`,
    );
    // On this connection, unqualified pragma reads of u would see this FK-free table.
    db.exec('CREATE TEMP TABLE u (id INTEGER PRIMARY KEY)');
    refuse(db, file, ['a'], 'FK_UPDATE_CYCLE', 'a', ['a -> u -> a']);
  });
});

describe('foreign-key rules: FK_DELETE_KEY_UPDATE', () => {
  test('a self-reference whose ON DELETE SET NULL writes a key column is refused', ({ makeDb }) => {
    const { db, file } = makeDb(
      'd.db',
      `CREATE TABLE v (id INTEGER NOT NULL UNIQUE, prev INTEGER REFERENCES v (id) ON DELETE SET NULL, PRIMARY KEY (id, prev));`,
    );
    refuse(db, file, ['v'], 'FK_DELETE_KEY_UPDATE', 'v', ['delete v -> update v.prev']);
  });

  test('a delete that comes back through an uncaptured table as an update of the key is refused', ({ makeDb }) => {
    // delete p -> (SET NULL) update link.code -> (ON UPDATE CASCADE) update p.id, p's key.
    const { db, file } = makeDb(
      'd.db',
      `CREATE TABLE p (id TEXT PRIMARY KEY NOT NULL REFERENCES link (code) ON UPDATE CASCADE);
       CREATE TABLE link (n INTEGER PRIMARY KEY, code TEXT UNIQUE REFERENCES p (id) ON DELETE SET NULL);`,
    );
    refuse(db, file, ['p'], 'FK_DELETE_KEY_UPDATE', 'p', ['delete p -> update link.code -> update p.id']);
  });

  test('a delete cascade followed by SET DEFAULT into the key through a chain is refused', ({ makeDb }) => {
    // delete a -> (CASCADE) delete b -> (SET DEFAULT) update a.k
    const { db, file } = makeDb(
      'd.db',
      `CREATE TABLE a (k INTEGER NOT NULL DEFAULT 0 REFERENCES b (id) ON DELETE SET DEFAULT, PRIMARY KEY (k)) WITHOUT ROWID;
       CREATE TABLE b (id INTEGER PRIMARY KEY, a_k INTEGER REFERENCES a (k) ON DELETE CASCADE);`,
    );
    refuse(db, file, ['a'], 'FK_DELETE_KEY_UPDATE', 'a', ['delete a -> delete b -> update a.k']);
  });
});

describe('foreign-key rules after enable', () => {
  test('verifyCapture and status report FK_UPDATE_CYCLE when a later schema change closes a cycle, and enable will not re-arm it', ({
    makeDb,
  }) => {
    const { db } = makeDb(
      'v.db',
      `CREATE TABLE a (id INTEGER PRIMARY KEY, u_id REFERENCES u (id) ON UPDATE CASCADE);
       CREATE TABLE u (id INTEGER PRIMARY KEY);`,
    );
    enable(db, ['a']);
    expect(verifyCapture(db).ok).toBe(true);
    // u is not captured; recreating it with a cascade back to a closes a -> u -> a.
    db.exec('DROP TABLE u; CREATE TABLE u (id INTEGER PRIMARY KEY, a_id REFERENCES a (id) ON UPDATE CASCADE);');
    const v = verifyCapture(db);
    expect(v.ok).toBe(false);
    expect(v.tables[0]).toMatchObject({ armed: false, reason: 'FK_UPDATE_CYCLE' });
    expect(v.tables[0]?.detail).toContain('a -> u -> a');
    expect(status(db).tables[0]).toMatchObject({ name: 'a', armed: false, reason: 'FK_UPDATE_CYCLE' });
    expect(() => enable(db, ['a'])).toThrow(CaptureRefusedError);
  });

  test('verifyCapture reports FK_DELETE_KEY_UPDATE when a later table creates the delete-to-key path', ({ makeDb }) => {
    const { db } = makeDb('v.db', 'CREATE TABLE p (id TEXT PRIMARY KEY NOT NULL REFERENCES link (code) ON UPDATE CASCADE);');
    enable(db, ['p']);
    expect(verifyCapture(db).ok).toBe(true);
    db.exec('CREATE TABLE link (n INTEGER PRIMARY KEY, code TEXT UNIQUE REFERENCES p (id) ON DELETE SET NULL);');
    expect(verifyCapture(db).tables[0]).toMatchObject({ armed: false, reason: 'FK_DELETE_KEY_UPDATE' });
  });
});
