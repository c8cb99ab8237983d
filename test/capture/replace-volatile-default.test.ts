// a UNIQUE or key column that is NOT NULL with a DEFAULT SQLite may evaluate to another value each time (random()) is refused: a REPLACE of NULL there deletes a row no guard can find
import path from 'node:path';
import { test, expect, runSqliteCli } from '../support/fixtures.ts';
import { enable, status } from '../../src/capture/index.ts';
import { CaptureRefusedError } from '../../src/errors.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { tableCells } from '../apply/support/target.ts';
import { databaseImage, pythonExec } from '../support/journal.ts';
import { replayAndSource } from './support/replay-journal.ts';
import { enableRefused } from './support/enable-refused.ts';

/*
 * Review round 5. `tok INTEGER NOT NULL DEFAULT (abs(random()) % 3) UNIQUE`,
 * written with INSERT OR REPLACE INTO t (id, tok, v) VALUES (i, NULL, 'n')
 * from the sqlite3 shell: SQLite replaces the NULL with the default after
 * the BEFORE triggers ran, and deletes the row that value collides with.
 * The guard looked up coalesce(NEW.tok, <default>), which drew another
 * random number: the row SQLite deleted was not noted, its delete never
 * journaled, and the mirror kept it (sync exit 0, health green).
 */

test('enable refuses a UNIQUE NOT NULL column whose DEFAULT calls random(), naming the table, column, default, rule and fix', ({
  makeDb,
}) => {
  const { db, file } = makeDb(
    's.db',
    "CREATE TABLE t (id INTEGER PRIMARY KEY, tok INTEGER NOT NULL DEFAULT (abs(random()) % 3) UNIQUE, v); INSERT INTO t VALUES (1, 0, 'a'), (2, 1, 'b'), (3, 2, 'c');",
  );
  const err = enableRefused(db, file, 't');
  expect({ code: err.code, table: err.table }).toEqual({ code: 'UNIQUE_VOLATILE_DEFAULT', table: 't' });
  expect(err.message).toContain('Table t: column tok');
  expect(err.message).toContain('DEFAULT (abs(random()) % 3)');
  expect(err.message).toContain('sqlite_autoindex_t_1');
  expect(err.message).toMatch(/Fix: .*drop the NOT NULL of tok.*do not capture t/);
});

test('enable refuses a key of randomblob(), an application function and a UNIQUE index made later, and takes a nullable or unindexed one', ({
  makeDb,
}) => {
  const { db, file } = makeDb(
    's.db',
    'CREATE TABLE k (id TEXT NOT NULL DEFAULT (lower(hex(randomblob(2)))) PRIMARY KEY, v) WITHOUT ROWID;' +
      'CREATE TABLE f (id INTEGER PRIMARY KEY, u TEXT NOT NULL DEFAULT (app_uuid()), v); CREATE UNIQUE INDEX f_u ON f (u);' +
      // A NULL written to a nullable column stays NULL; an unindexed column deletes nothing.
      'CREATE TABLE ok1 (id INTEGER PRIMARY KEY, u INTEGER DEFAULT (random()) UNIQUE);' +
      'CREATE TABLE ok2 (id INTEGER PRIMARY KEY, u INTEGER NOT NULL DEFAULT (random()), w UNIQUE);',
  );
  const k = enableRefused(db, file, 'k');
  expect([k.code, k.message]).toEqual(['UNIQUE_VOLATILE_DEFAULT', expect.stringContaining('column id')]);
  const f = enableRefused(db, file, 'f');
  expect([f.code, f.message]).toEqual(['UNIQUE_VOLATILE_DEFAULT', expect.stringContaining('app_uuid')]);
  expect(f.message).toContain('f_u');
  enable(db, ['ok1', 'ok2']);
  expect(status(db).tables.every((t) => t.armed)).toBe(true);
});

test('a time DEFAULT is one value for the whole statement: the row a REPLACE of NULL deletes through it is journaled', ({ makeDb }) => {
  // 'now' is the same for every call in one sqlite3_step(), the guard's included (SQLite's date and time functions).
  const { db, file } = makeDb(
    's.db',
    "CREATE TABLE t (id INTEGER PRIMARY KEY, y TEXT NOT NULL DEFAULT (strftime('%Y', 'now')) UNIQUE, d TEXT NOT NULL DEFAULT CURRENT_DATE, v, UNIQUE (d, v));",
  );
  enable(db, ['t']);
  runSqliteCli(
    file,
    "INSERT INTO t VALUES (1, strftime('%Y', 'now'), current_date, 'a'), (2, '1999', '1999-01-01', 'b'); INSERT OR REPLACE INTO t (id, y, d, v) VALUES (3, NULL, NULL, 'c'); INSERT OR REPLACE INTO t (id, y, d, v) VALUES (4, '2000', NULL, 'c');",
  );
  const r = replayAndSource(db, 't');
  expect(r.source).toHaveLength(2);
  expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
});

test('a captured table that gets a UNIQUE index over such a column is unarmed, and the mirror is not left holding rows the sqlite3 shell deleted', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb(
    's.db',
    "CREATE TABLE t (id INTEGER PRIMARY KEY, tok INTEGER NOT NULL DEFAULT (abs(random()) % 3), v); INSERT INTO t VALUES (1, 0, 'a'), (2, 1, 'b'), (3, 2, 'c');",
  );
  enable(db, ['t']);
  const target = path.join(tmp, 'target.db');
  await sync(file, target, { projections: [{ name: 't', source: 't', kind: 'mirror' }] });
  runSqliteCli(file, 'CREATE UNIQUE INDEX t_tok ON t (tok);');
  expect(status(db).tables.find((t) => t.name === 't')).toMatchObject({ armed: false, reason: 'UNIQUE_VOLATILE_DEFAULT' });
  runSqliteCli(
    file,
    Array.from({ length: 16 }, (_, i) => `INSERT OR REPLACE INTO t (id, tok, v) VALUES (${10 + i}, NULL, 'n');`).join(' '),
  );
  const s = await sync(file, target);
  const p = s.projections[0];
  const tg = openDatabase(target);
  const mirror = tableCells(tg, 'main', 't');
  tg.close();
  // Unarmed, sync cannot re-arm it: suspended with the reason, never active with rows the source lost.
  expect({ state: p?.state, reason: p?.state === 'suspended' ? p.reason : undefined }).toEqual({
    state: 'suspended',
    reason: 'TABLE_UNARMED',
  });
  expect(mirror).not.toEqual(tableCells(db, 'main', 't'));
});

test('a random id of 16 bytes or more (lower(hex(randomblob(16)))) is taken: a REPLACE of NULL through it collides with no row, and the mirror equals the source', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb(
    's.db',
    'CREATE TABLE u (id TEXT NOT NULL DEFAULT (lower(hex(randomblob(16)))) PRIMARY KEY, v) WITHOUT ROWID;' +
      'CREATE TABLE w (id INTEGER PRIMARY KEY, b BLOB NOT NULL DEFAULT (randomblob(32)) UNIQUE, h TEXT NOT NULL DEFAULT ( UPPER( hex( randomblob( 16 ) ) ) ) UNIQUE, v);' +
      // Fewer bytes, or the random id cut down, may collide: still refused.
      'CREATE TABLE short (id INTEGER PRIMARY KEY, u TEXT NOT NULL DEFAULT (hex(randomblob(8))) UNIQUE);' +
      'CREATE TABLE cut (id INTEGER PRIMARY KEY, u TEXT NOT NULL DEFAULT (substr(hex(randomblob(16)), 1, 2)) UNIQUE);',
  );
  enable(db, ['u', 'w']);
  expect(status(db).tables.every((t) => t.armed)).toBe(true);
  expect(enableRefused(db, file, 'short').code).toBe('UNIQUE_VOLATILE_DEFAULT');
  expect(enableRefused(db, file, 'cut').code).toBe('UNIQUE_VOLATILE_DEFAULT');
  const target = path.join(tmp, 'target.db');
  await sync(file, target, {
    projections: [
      { name: 'u', source: 'u', kind: 'mirror' },
      { name: 'w', source: 'w', kind: 'mirror' },
    ],
  });
  runSqliteCli(
    file,
    Array.from(
      { length: 20 },
      (_, i) =>
        `INSERT OR REPLACE INTO u (id, v) VALUES (NULL, 'n${i}'); INSERT OR REPLACE INTO w (id, b, h, v) VALUES (${i % 5}, NULL, NULL, 'n${i}');`,
    ).join(' '),
  );
  const s = await sync(file, target);
  expect(s.projections.map((p) => p.state)).toEqual(['active', 'active']);
  const tg = openDatabase(target);
  const mirror = { u: tableCells(tg, 'main', 'u'), w: tableCells(tg, 'main', 'w') };
  tg.close();
  expect(mirror.u).toHaveLength(20);
  expect(mirror.w).toHaveLength(5);
  expect(mirror).toEqual({ u: tableCells(db, 'main', 'u'), w: tableCells(db, 'main', 'w') });
});
