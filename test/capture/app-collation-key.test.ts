// a key compared with a collation the application registers on its own connections is refused at enable: sluice cannot key, build or compare its mirror
import { test, expect, runPython } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { CaptureRefusedError } from '../../src/errors.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { readFileSync } from 'node:fs';
import { enableRefused } from './support/enable-refused.ts';

/*
 * Review round 5: `k TEXT PRIMARY KEY COLLATE rev`, rev registered by the
 * application (Python's create_collation). enable took it, and every sync
 * then failed with SQLite's bare "no such collation sequence: REV", while
 * health advised running sync again.
 */

function makeWithCollation(file: string, schema: string): void {
  runPython(
    `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.create_collation('rev', lambda a, b: (a < b) - (a > b))
c.executescript(sys.argv[2])
c.commit()
c.close()
`,
    [file, schema],
  );
}

/** The file's schema and bytes (the rows of a table keyed with rev cannot be read here: sluice's connections lack it). */
function image(db: ReturnType<typeof openDatabase>, file: string): unknown {
  return {
    schema: db.prepare('SELECT type, name, sql FROM main.sqlite_schema ORDER BY name').all(),
    bytes: readFileSync(file).toString('hex'),
  };
}

function refusal(file: string, table: string): CaptureRefusedError {
  const db = openDatabase(file);
  try {
    return enableRefused(db, file, table, image);
  } finally {
    db.close();
  }
}

test('enable refuses a key column declared with an application collation, naming the table, column, collation and fix', ({ tmp }) => {
  const file = `${tmp}/s.db`;
  makeWithCollation(file, "CREATE TABLE t (k TEXT PRIMARY KEY COLLATE rev, v); INSERT INTO t VALUES ('a', 1);");
  const err = refusal(file, 't');
  expect({ code: err.code, table: err.table }).toEqual({ code: 'COLLATION_UNKNOWN', table: 't' });
  expect(err.message).toContain('Table t: key column k');
  expect(err.message).toContain('COLLATE rev');
  expect(err.message).toMatch(/Fix: .*BINARY, NOCASE or RTRIM.*do not capture t/);
});

test('enable refuses a key whose own index names an application collation, and takes a built-in one', ({ tmp }) => {
  const file = `${tmp}/s.db`;
  makeWithCollation(
    file,
    'CREATE TABLE t (k TEXT, v, PRIMARY KEY (k COLLATE rev)); CREATE TABLE ok (k TEXT COLLATE NOCASE PRIMARY KEY, v TEXT COLLATE rtrim) WITHOUT ROWID;',
  );
  const err = refusal(file, 't');
  expect([err.code, err.message]).toEqual(['COLLATION_UNKNOWN', expect.stringContaining('key column k')]);
  const db = openDatabase(file);
  enable(db, ['ok']);
  db.close();
});
