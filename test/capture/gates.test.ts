import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { enable, status, verifyCapture } from '../../src/capture/index.ts';
import { CaptureRefusedError, InvalidInputError } from '../../src/errors.ts';
import { databaseImage, journalEvents } from '../support/journal.ts';
import type { Db } from '../../src/sqlite/index.ts';

/*
 * Every gate refuses with a CaptureRefusedError whose code is stable and
 * whose message names the table (or object), and leaves the database
 * byte-identical: schema (main and temp), schema_version, every row, and the
 * bytes of the file and its WAL.
 */

type MakeDb = (name?: string, schema?: string) => { db: Db; file: string };

function expectRefused(
  db: Db,
  file: string,
  tables: readonly string[],
  code: string,
  names: string,
  options: Parameters<typeof enable>[2] = {},
): CaptureRefusedError {
  const before = databaseImage(db, file);
  let caught: unknown;
  try {
    enable(db, tables, options);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(CaptureRefusedError);
  const err = caught as CaptureRefusedError;
  expect(err.code).toBe(code);
  expect(err.table).toBe(names);
  expect(err.message).toContain(names);
  // Says what to do about it.
  expect(err.message).toMatch(/Fix:|Drop|Rename|Capture|Pick|Check/);
  expect(databaseImage(db, file)).toEqual(before);
  expect(db.inTransaction).toBe(false);
  return err;
}

const T = "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'one');";

describe('table gates', () => {
  test('a table with no explicit primary key (only the hidden rowid) is refused: NO_PRIMARY_KEY', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', 'CREATE TABLE nokey (a, b); INSERT INTO nokey VALUES (1, 2);');
    expectRefused(db, file, ['nokey'], 'NO_PRIMARY_KEY', 'nokey');
  });

  test('a nullable primary key with NULL rows already in it is refused: NULL_KEY_ROWS', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', "CREATE TABLE nk (k TEXT PRIMARY KEY, v); INSERT INTO nk VALUES ('a', 1), (NULL, 2);");
    const err = expectRefused(db, file, ['nk'], 'NULL_KEY_ROWS', 'nk');
    expect(err.message).toContain('1 row(s)');
  });

  test('a nullable primary key with no NULL rows is captured, and a later NULL key fails loudly from any writer', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', "CREATE TABLE nk (a TEXT, b INTEGER, v, PRIMARY KEY (a, b)); INSERT INTO nk VALUES ('x', 1, 'v');");
    enable(db, ['nk']);
    const rows = () => db.prepare('SELECT count(*) AS n FROM nk').get();
    expect(() => db.exec("INSERT INTO nk VALUES (NULL, 2, 'v')")).toThrow('sluice: primary key of nk must not be NULL');
    expect(() => db.exec('UPDATE nk SET b = NULL')).toThrow('sluice: primary key of nk must not be NULL');
    const out = runPython(
      `
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
try:
    with conn:
        conn.execute("INSERT INTO nk VALUES ('y', NULL, 'v')")
except sqlite3.Error as e:
    print(type(e).__name__, e)
`,
      [file],
    );
    expect(out).toMatch(/IntegrityError sluice: primary key of nk must not be NULL/);
    expect(rows()).toEqual({ n: 1n });
    expect(journalEvents(db)).toEqual([]);
  });

  test('a view is refused: VIEW_REFUSED', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', `${T} CREATE VIEW v1 AS SELECT * FROM t;`);
    expectRefused(db, file, ['v1'], 'VIEW_REFUSED', 'v1');
  });

  test('an FTS5 virtual table, and its shadow tables, are refused: VIRTUAL_TABLE_REFUSED', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', "CREATE VIRTUAL TABLE docs USING fts5(body); INSERT INTO docs VALUES ('hello');");
    expectRefused(db, file, ['docs'], 'VIRTUAL_TABLE_REFUSED', 'docs');
    expectRefused(db, file, ['docs_data'], 'VIRTUAL_TABLE_REFUSED', 'docs_data');
  });

  test('a TEMP table is refused: TEMP_TABLE_REFUSED', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', T);
    db.exec('CREATE TEMP TABLE scratch (id INTEGER PRIMARY KEY, v)');
    expectRefused(db, file, ['scratch'], 'TEMP_TABLE_REFUSED', 'scratch');
  });

  test('a TEMP table or view shadowing the table to capture is refused: TEMP_SHADOW', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', T);
    db.exec('CREATE TEMP TABLE t (id INTEGER PRIMARY KEY, v)');
    expectRefused(db, file, ['t'], 'TEMP_SHADOW', 't');
    db.exec('DROP TABLE temp.t; CREATE TEMP VIEW t AS SELECT 1 AS id');
    expectRefused(db, file, ['t'], 'TEMP_SHADOW', 't');
  });

  test('a TEMP object using a _sluice_ name is refused, before and after capture exists: TEMP_SHADOW', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', T);
    db.exec('CREATE TEMP TABLE _sluice_state (x)');
    expectRefused(db, file, ['t'], 'TEMP_SHADOW', '_sluice_state');
    db.exec('DROP TABLE temp._sluice_state');
    enable(db, ['t']);
    db.exec('CREATE TEMP TABLE _sluice_journal (seq INTEGER PRIMARY KEY)');
    expectRefused(db, file, ['t'], 'TEMP_SHADOW', '_sluice_journal');
  });

  test('a TEMP object shadowing an already captured table is reported unarmed and refused on the next enable', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', T);
    enable(db, ['t']);
    db.exec('CREATE TEMP TABLE t (x)');
    const v = verifyCapture(db);
    expect(v.ok).toBe(false);
    expect(v.tables[0]).toMatchObject({ armed: false, reason: 'TEMP_SHADOW' });
    expectRefused(db, file, ['t'], 'TEMP_SHADOW', 't');
  });

  test('a table with a UNIQUE index over an expression is refused (UNIQUE_EXPRESSION_INDEX), and one added later unarms the table until it is dropped', ({
    makeDb,
  }) => {
    const { db, file } = makeDb(
      'g.db',
      'CREATE TABLE u (id INTEGER PRIMARY KEY, email TEXT); CREATE UNIQUE INDEX u_email ON u (lower(email)); CREATE TABLE w (id INTEGER PRIMARY KEY, email TEXT);',
    );
    const err = expectRefused(db, file, ['u'], 'UNIQUE_EXPRESSION_INDEX', 'u');
    expect(err.message).toContain('u_email');
    // A plain or partial UNIQUE index is fine; one over an expression added later unarms the table.
    db.exec("CREATE UNIQUE INDEX w_email ON w (email) WHERE email <> ''");
    enable(db, ['w']);
    db.exec('CREATE UNIQUE INDEX w_lower ON w (lower(email))');
    expect(status(db).tables.find((t) => t.name === 'w')).toMatchObject({ armed: false, reason: 'UNIQUE_EXPRESSION_INDEX' });
    expectRefused(db, file, ['w'], 'UNIQUE_EXPRESSION_INDEX', 'w');
    db.exec('DROP INDEX w_lower');
    expect(status(db).tables.find((t) => t.name === 'w')).toMatchObject({ armed: true });
  });

  test('a table that does not exist, and reserved names, are refused', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', `${T} CREATE TABLE auto (id INTEGER PRIMARY KEY AUTOINCREMENT);`);
    expectRefused(db, file, ['missing'], 'TABLE_NOT_FOUND', 'missing');
    expectRefused(db, file, ['sqlite_sequence'], 'RESERVED_NAME', 'sqlite_sequence');
    enable(db, ['t']);
    expectRefused(db, file, ['_sluice_journal'], 'RESERVED_NAME', '_sluice_journal');
  });

  test("a column whose name starts with sluice's prefix _sluice_ (in any ASCII case) is refused: RESERVED_COLUMN_NAME", ({ makeDb }) => {
    const { db, file } = makeDb(
      'g.db',
      `${T} CREATE TABLE r (id INTEGER PRIMARY KEY, "_SLUICE_seq" TEXT, v); INSERT INTO r VALUES (1, 'x', 2);`,
    );
    const err = expectRefused(db, file, ['r'], 'RESERVED_COLUMN_NAME', 'r');
    expect(err.message).toContain('column _SLUICE_seq');
    expect(err.message).toMatch(/reserved/);
    expect(err.message).toContain('ALTER TABLE "r" RENAME COLUMN "_SLUICE_seq" TO');
    // With a capture already there, too.
    enable(db, ['t']);
    expectRefused(db, file, ['r'], 'RESERVED_COLUMN_NAME', 'r');
  });

  test('a reserved column added by ALTER TABLE unarms the table with RESERVED_COLUMN_NAME, and re-arming it is refused the same way and changes nothing', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('g.db', T);
    enable(db, ['t']);
    db.exec('ALTER TABLE t ADD COLUMN _sluice_side INTEGER');
    const v = verifyCapture(db);
    expect(v.tables[0]).toMatchObject({ armed: false, reason: 'RESERVED_COLUMN_NAME' });
    expect(v.tables[0]?.detail).toContain('column _sluice_side of t');
    const err = expectRefused(db, file, ['t'], 'RESERVED_COLUMN_NAME', 't');
    expect(err.message).toContain('column _sluice_side');
    // Re-arming everything else does not re-arm it behind the user's back: it stays unarmed.
    db.exec('CREATE TABLE u (id INTEGER PRIMARY KEY)');
    expect(enable(db, ['u']).rearmed).toEqual([]);
    expect(verifyCapture(db).tables.find((a) => a.table.name === 't')).toMatchObject({ armed: false, reason: 'RESERVED_COLUMN_NAME' });
    db.exec('ALTER TABLE t RENAME COLUMN _sluice_side TO side');
    expect(enable(db, ['t']).rearmed).toEqual(['t']);
  });

  test('one refused table in a list refuses the whole call: nothing is installed for the others', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', `${T} CREATE TABLE nokey (a);`);
    expectRefused(db, file, ['t', 'nokey'], 'NO_PRIMARY_KEY', 'nokey');
    expect(status(db).enabled).toBe(false);
  });

  test('a refused table leaves an existing capture exactly as it was', ({ makeDb }) => {
    const { db, file } = makeDb('g.db', `${T} CREATE TABLE nokey (a);`);
    const first = enable(db, ['t']);
    db.exec("INSERT INTO t VALUES (2, 'two')");
    expectRefused(db, file, ['nokey'], 'NO_PRIMARY_KEY', 'nokey', { retention: 5000, mode: 'keys' });
    expect(status(db)).toMatchObject({
      generation: first.generation,
      retention: 1_000_000,
      seq: 1,
      tables: [{ name: 't', mode: 'images', armed: true }],
    });
  });
});

describe('option checks', () => {
  test('a retention below 1,024 or an unknown mode is refused with InvalidInputError before anything is written', ({ makeDb }) => {
    const { db, file } = makeDb('o.db', T);
    const before = databaseImage(db, file);
    for (const [options, code] of [
      [{ retention: 1023 }, 'BAD_RETENTION'],
      [{ retention: 1.5e3 + 0.5 }, 'BAD_RETENTION'],
      [{ mode: 'rows' as never }, 'BAD_MODE'],
    ] as const) {
      let caught: unknown;
      try {
        enable(db, ['t'], options);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(InvalidInputError);
      expect((caught as InvalidInputError).code).toBe(code);
    }
    expect(databaseImage(db, file)).toEqual(before);
    expect(enable(db, ['t'], { retention: 1024 }).created).toBe(true);
  });
});

describe('namespace gate', () => {
  const foreign: readonly [string, string][] = [
    ['a foreign table', 'CREATE TABLE _sluice_mine (x)'],
    ['a foreign index', 'CREATE INDEX _sluice_idx ON t (v)'],
    ['a foreign view', 'CREATE VIEW _sluice_view AS SELECT 1'],
    ['a foreign trigger', 'CREATE TRIGGER _sluice_audit AFTER INSERT ON t BEGIN SELECT 1; END'],
    ['a foreign trigger named like ours', 'CREATE TRIGGER _sluice_t1_ins AFTER INSERT ON t BEGIN SELECT 1; END'],
    [
      'a foreign table with the name of our state table',
      "CREATE TABLE _sluice_state (owner TEXT); INSERT INTO _sluice_state VALUES ('someone else')",
    ],
    ['a foreign table with the name of our journal', 'CREATE TABLE _sluice_journal (seq INTEGER PRIMARY KEY, note TEXT)'],
  ];
  for (const [what, ddl] of foreign) {
    test(`${what} is refused on a fresh database: NAMESPACE_COLLISION`, ({ makeDb }) => {
      const { db, file } = makeDb('n.db', `${T} ${ddl};`);
      const name = /(?:TABLE|INDEX|VIEW|TRIGGER) (_sluice_\w+)/.exec(ddl)?.[1] as string;
      expectRefused(db, file, ['t'], 'NAMESPACE_COLLISION', name);
    });
  }

  test('a foreign _sluice_ object added after capture makes the next enable refuse and changes nothing', ({ makeDb }) => {
    const { db, file } = makeDb('n.db', T);
    enable(db, ['t']);
    db.exec('CREATE TABLE _sluice_extra (x)');
    expectRefused(db, file, ['t'], 'NAMESPACE_COLLISION', '_sluice_extra');
  });
});
