// a UNIQUE generated column computed from the INTEGER PRIMARY KEY is refused, since an insert that leaves the key to SQLite deletes a row no guard can find
import path from 'node:path';
import { test, expect, runCli } from '../support/fixtures.ts';
import { enable, status } from '../../src/capture/index.ts';
import { CaptureRefusedError } from '../../src/errors.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { tableCells } from '../apply/support/target.ts';
import { databaseImage, pythonExec } from '../support/journal.ts';
import { replayAndSource } from './support/replay-journal.ts';
import { enableRefused } from './support/enable-refused.ts';

/*
 * Review round 3. A ring buffer: `slot INT AS (id % 3) UNIQUE` over the
 * INTEGER PRIMARY KEY, written with INSERT OR REPLACE and no id (Python's
 * sqlite3, recursive_triggers off). SQLite assigns the rowid after the
 * BEFORE triggers ran: there NEW.id is -1, and so is NEW.slot, so the
 * guard looks up slot -1 and notes nothing; the REPLACE then deletes the
 * row in the real slot, and no delete is journaled. The rowid SQLite will
 * pick cannot be known in a trigger in every case (a random one once the
 * largest rowid is 2^63-1, AUTOINCREMENT's counter, a user trigger that
 * writes the table), so such a table is refused at enable, and one that
 * gets such an index after it was armed is unarmed: never a silent loss.
 */

const RING = 'CREATE TABLE log (id INTEGER PRIMARY KEY, msg TEXT, slot INT AS (id % 3) UNIQUE)';
const RING_WRITES = Array.from({ length: 10 }, (_, i) => `INSERT OR REPLACE INTO log (msg) VALUES ('m${i}');`).join(' ');

for (const kind of ['', ' STORED']) {
  test(`enable refuses a${kind === '' ? ' virtual' : ' stored'} UNIQUE generated column computed from the INTEGER PRIMARY KEY, naming the table, index, column and fix`, ({
    makeDb,
  }) => {
    const { db, file } = makeDb('s.db', RING.replace('(id % 3)', `(id % 3)${kind}`));
    const err = enableRefused(db, file, 'log');
    expect({ code: err.code, table: err.table }).toEqual({ code: 'UNIQUE_FROM_ROWID', table: 'log' });
    expect(err.message).toContain('Table log');
    expect(err.message).toContain('sqlite_autoindex_log_1');
    expect(err.message).toContain('column slot');
    expect(err.message).toContain('id, the INTEGER PRIMARY KEY');
    expect(err.message).toMatch(/Fix: .*do not capture log/);
  });
}

test('enable refuses one computed from the key through another generated column, and a UNIQUE index made by CREATE UNIQUE INDEX', ({
  makeDb,
}) => {
  const { db, file } = makeDb(
    's.db',
    'CREATE TABLE a (id INTEGER PRIMARY KEY, msg, s AS (id % 3), s2 AS (s + 1), UNIQUE (msg, s2));' +
      'CREATE TABLE b (id INTEGER PRIMARY KEY AUTOINCREMENT, msg, slot AS (id % 4)); CREATE UNIQUE INDEX b_slot ON b (slot);',
  );
  const a = enableRefused(db, file, 'a');
  expect([a.code, a.message]).toEqual(['UNIQUE_FROM_ROWID', expect.stringContaining('column s2')]);
  const b = enableRefused(db, file, 'b');
  expect([b.code, b.message]).toEqual(['UNIQUE_FROM_ROWID', expect.stringContaining('b_slot')]);
});

test('a UNIQUE generated column from a key that is not the rowid is captured, and a ring buffer written by Python journals every delete', ({
  makeDb,
}) => {
  // WITHOUT ROWID: the key is always given, so NEW.id in the guard is the real one.
  const { db, file } = makeDb(
    's.db',
    'CREATE TABLE log (id INTEGER PRIMARY KEY, msg TEXT, slot INT AS (id % 3) UNIQUE) WITHOUT ROWID; CREATE TABLE other (id INTEGER PRIMARY KEY, a, g AS (a * 2) UNIQUE);',
  );
  enable(db, ['log', 'other']);
  pythonExec(file, Array.from({ length: 10 }, (_, i) => `INSERT OR REPLACE INTO log (id, msg) VALUES (${i + 1}, 'm${i}');`).join(' '));
  const r = replayAndSource(db, 'log');
  expect(r.source).toHaveLength(3);
  expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
});

test('a captured table that gets such a UNIQUE index is unarmed, and a mirror synced across a Python ring buffer is not left holding deleted rows', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb('s.db', 'CREATE TABLE log (id INTEGER PRIMARY KEY, msg TEXT, slot INT AS (id % 3))');
  enable(db, ['log']);
  const target = path.join(tmp, 'target.db');
  await sync(file, target, { projections: [{ name: 'log', source: 'log', kind: 'mirror' }] });
  db.exec('CREATE UNIQUE INDEX log_slot ON log (slot)');
  expect(status(db).tables.find((t) => t.name === 'log')).toMatchObject({ armed: false, reason: 'UNIQUE_FROM_ROWID' });
  pythonExec(file, RING_WRITES);
  const s = await sync(file, target);
  const p = s.projections[0];
  // Unarmed, sync cannot re-arm it: the mirror is suspended with the reason, never active with rows the source lost.
  expect({ state: p?.state, reason: p?.state === 'suspended' ? p.reason : undefined }).toEqual({
    state: 'suspended',
    reason: 'TABLE_UNARMED',
  });
  expect(tableCells(db, 'main', 'log')).toHaveLength(3);
  // Its fix is to change the table first: enable alone refuses it, so neither sync nor status offers enable alone.
  const change = 'change log as the UNIQUE_FROM_ROWID refusal says (enable refuses it as it is, and says how), then run sluice enable';
  expect(String(p?.detail?.message)).toContain(`To re-arm it, ${change}`);
  const shown = runCli(['status', file]);
  // The change itself is named too, in the unarmed detail beside it: the index can be dropped alone.
  const dropIt = 'to arm it again, drop the UNIQUE index log_slot (DROP INDEX ';
  expect({ status: shown.status, fix: /fix: (.*)/.exec(shown.stdout)?.[1], drop: shown.stdout.includes(dropIt) }).toEqual({
    status: 3,
    fix: `${change} ${file} log`,
    drop: true,
  });
  // sync, health and verify name the same fix, never enable --mode images (which enable refuses as well).
  const fix = `TABLE_UNARMED: fix the source: ${change} ${file} log, then run sluice sync again`;
  for (const args of [
    ['sync', file, target],
    ['health', target],
    ['verify', file, target],
  ]) {
    const r = runCli(args);
    expect(
      { status: r.status, fix: r.stdout.includes(fix), images: r.stdout.includes('--mode images'), drop: r.stdout.includes(dropIt) },
      r.stdout,
    ).toEqual({
      status: 3,
      fix: true,
      images: false,
      drop: true,
    });
  }
  // Dropping the index arms it again; the next sync rebuilds the mirror from the source (DDL since its cursor).
  db.exec('DROP INDEX log_slot');
  expect(status(db).tables.find((t) => t.name === 'log')).toMatchObject({ armed: true });
  const armed = runCli(['health', target]);
  expect(armed.stdout).toContain(
    `TABLE_UNARMED: log is armed again: run sluice sync ${file} ${target}, which lifts the suspension of log by itself`,
  );
  const again = await sync(file, target);
  const tg = openDatabase(target);
  const after = tableCells(tg, 'main', 'log');
  tg.close();
  expect({ state: again.projections[0]?.state, rows: after }).toEqual({
    state: 'active',
    rows: tableCells(db, 'main', 'log', ['id', 'msg', 'slot']),
  });
});

test('enable refuses a UNIQUE generated column computed from a NOT NULL column with a DEFAULT, which a REPLACE of NULL fills in after the triggers (UNIQUE_FROM_DEFAULT)', ({
  makeDb,
}) => {
  // INSERT OR REPLACE INTO tags (name) VALUES (NULL) takes 'misc' after the guard saw name_key computed from NULL, and deleted the 'misc' row with no event.
  const { db, file } = makeDb(
    's.db',
    "CREATE TABLE tags (id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT 'misc', name_key TEXT AS (lower(name)) UNIQUE);" +
      "CREATE TABLE free (id INTEGER PRIMARY KEY, name TEXT DEFAULT 'misc', name_key TEXT AS (lower(name)) UNIQUE);",
  );
  const err = enableRefused(db, file, 'tags');
  expect({ code: err.code, table: err.table }).toEqual({ code: 'UNIQUE_FROM_DEFAULT', table: 'tags' });
  expect(err.message).toContain('column name_key, generated from name, a NOT NULL column with a DEFAULT');
  expect(err.message).toMatch(/Fix: drop the DEFAULT or the NOT NULL of name, .*do not capture tags/);
  // Without NOT NULL a NULL stays NULL: the guard computes what the row will hold, and the table is captured exactly.
  enable(db, ['free']);
  pythonExec(
    file,
    "INSERT INTO free (name) VALUES ('misc'); INSERT OR REPLACE INTO free (name) VALUES ('MISC'); INSERT OR REPLACE INTO free (name) VALUES (NULL);",
  );
  const r = replayAndSource(db, 'free');
  expect(r.source).toHaveLength(2);
  expect({ rows: r.model, problems: r.problems }).toEqual({ rows: r.source, problems: [] });
});

test("a generated column that names the key only inside a string literal (doc ->> 'id') is not computed from it: the table is captured", ({
  makeDb,
}) => {
  const { db } = makeDb('s.db', "CREATE TABLE events (id INTEGER PRIMARY KEY, doc TEXT NOT NULL, ext_id TEXT AS (doc ->> 'id') UNIQUE)");
  enable(db, ['events']);
  expect(status(db).tables.find((t) => t.name === 'events')).toMatchObject({ armed: true });
});
