// changed since is true exactly when a listed table changed
import { test, expect, describe, runSqliteCli, runPython } from '../support/fixtures.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable, bump, disable } from '../../src/capture/index.ts';
import { snapshot, readBatch, changedSince } from '../../src/feed/index.ts';

const SCHEMA = `
  CREATE TABLE a (id INTEGER PRIMARY KEY, v, name TEXT COLLATE NOCASE);
  CREATE TABLE b (id INTEGER PRIMARY KEY, v);
  CREATE TABLE loose (id INTEGER PRIMARY KEY, v);
  INSERT INTO a VALUES (1, 1, 'abc'), (2, 'x', 'def');
  INSERT INTO b VALUES (1, X'00');
`;

function setup(makeDb: (name?: string, schema?: string) => { db: Db; file: string }) {
  const { db, file } = makeDb('s.db', SCHEMA);
  enable(db, ['a', 'b']);
  const cursor = snapshot(db, ['a', 'b'], { onRow: () => {} }).cursor;
  return { db, file, cursor };
}

describe('changedSince', () => {
  test('is false right after the snapshot and after updates that change nothing', ({ makeDb }) => {
    const { db, file, cursor } = setup(makeDb);
    expect(changedSince(db, cursor)).toEqual({ changed: false, lastSeq: 0 });
    db.exec("UPDATE a SET v = v, name = name; UPDATE b SET v = X'00'; UPDATE a SET v = 1 WHERE id = 1");
    runPython("import sqlite3,sys\ncon=sqlite3.connect(sys.argv[1])\ncon.execute('UPDATE a SET name = name')\ncon.commit()", [file]);
    expect(changedSince(db, cursor).changed).toBe(false);
    expect(changedSince(db, cursor, ['a']).changed).toBe(false);
  });

  test('is false after a rolled-back write, in this process or another', ({ makeDb }) => {
    const { db, file, cursor } = setup(makeDb);
    db.exec("BEGIN; INSERT INTO a VALUES (9, 9, 'z'); DELETE FROM b; ROLLBACK");
    runSqliteCli(file, "BEGIN; UPDATE a SET v = 'other'; ROLLBACK;");
    expect(changedSince(db, cursor).changed).toBe(false);
  });

  test('is true after a write to any listed table, from any writer, and false again from the batch cursor', ({ makeDb }) => {
    const { db, file, cursor } = setup(makeDb);
    runSqliteCli(file, "UPDATE b SET v = X'01';");
    const r = changedSince(db, cursor);
    expect(r.changed).toBe(true);
    expect(r.lastSeq).toBe(1);
    expect(changedSince(db, cursor, ['b']).changed).toBe(true);
    expect(changedSince(db, cursor, ['a', 'b']).changed).toBe(true);
    const next = readBatch(db, cursor).to;
    expect(changedSince(db, next).changed).toBe(false);
  });

  test('is false for a write to a table that is not listed', ({ makeDb }) => {
    const { db, cursor } = setup(makeDb);
    db.exec("INSERT INTO b VALUES (2, 'new'); INSERT INTO loose VALUES (1, 1)");
    expect(changedSince(db, cursor, ['a'])).toEqual({ changed: false, lastSeq: 0 });
    expect(changedSince(db, cursor, ['b']).changed).toBe(true);
  });

  test('counts changes that collation or numeric equality would hide', ({ makeDb }) => {
    const { db, cursor } = setup(makeDb);
    db.exec("UPDATE a SET name = 'ABC' WHERE id = 1");
    const afterCase = changedSince(db, cursor);
    expect(afterCase.changed).toBe(true);
    const c2 = readBatch(db, cursor).to;
    db.exec('UPDATE a SET v = 1.0 WHERE id = 1');
    expect(changedSince(db, c2).changed).toBe(true);
  });

  test('is true, with the reason, for an unarmed or untracked table', ({ makeDb }) => {
    const { db, file, cursor } = setup(makeDb);
    expect(changedSince(db, cursor, ['loose'])).toEqual({ changed: true, rebuild: 'TABLE_UNTRACKED' });
    const onlyA = snapshot(db, ['a'], { onRow: () => {} }).cursor;
    runSqliteCli(file, 'DROP TRIGGER _sluice_t2_upd;');
    // b is unarmed: asking about it (or with a cursor over it) can never answer "unchanged".
    expect(changedSince(db, onlyA, ['b'])).toEqual({ changed: true, rebuild: 'TABLE_UNARMED' });
    expect(changedSince(db, cursor)).toEqual({ changed: true, rebuild: 'TABLE_UNARMED' });
    // a is armed, but DDL sluice did not make ran since onlyA (the DROP TRIGGER): a
    // UNIQUE index made and dropped in that time would leave no trace, so a poller
    // that cannot compare its copy rebuilds once.
    expect(changedSince(db, onlyA, ['a'])).toEqual({ changed: true, rebuild: 'SCHEMA_WINDOW' });
    expect(changedSince(db, snapshot(db, ['a'], { onRow: () => {} }).cursor, ['a'])).toEqual({ changed: false, lastSeq: 0 });
  });

  test('is true, TABLE_NOT_IN_CURSOR, for a table written before it was captured, after a cursor that does not cover it', ({ makeDb }) => {
    const { db, file } = makeDb('s.db', SCHEMA);
    enable(db, ['a']);
    const onlyA = snapshot(db, ['a'], { onRow: () => {} }).cursor;
    // b is written before it is captured, then captured: its last seq (0) is no later than the cursor's, but it changed.
    runPython(
      'import sqlite3,sys\ncon=sqlite3.connect(sys.argv[1])\ncon.execute("UPDATE b SET v = \'changed\' WHERE id = 1")\ncon.commit()',
      [file],
    );
    enable(db, ['b']);
    expect(changedSince(db, onlyA, ['b'])).toEqual({ changed: true, rebuild: 'TABLE_NOT_IN_CURSOR' });
    expect(changedSince(db, onlyA, ['a', 'b'])).toEqual({ changed: true, rebuild: 'TABLE_NOT_IN_CURSOR' });
    expect(changedSince(db, onlyA, ['a'])).toEqual({ changed: false, lastSeq: 0 });
  });

  test('is true, TABLE_NOT_IN_CURSOR, for a table the cursor does not cover that was disabled, written and enabled again since', ({
    makeDb,
  }) => {
    const { db, file } = setup(makeDb);
    const stillA = snapshot(db, ['a'], { onRow: () => {} }).cursor;
    disable(db, ['b']);
    runSqliteCli(file, "UPDATE b SET v = 'again' WHERE id = 1;");
    enable(db, ['b']);
    expect(changedSince(db, stillA, ['b'])).toEqual({ changed: true, rebuild: 'TABLE_NOT_IN_CURSOR' });
  });

  test('matches table names as SQLite does, ignoring ASCII case, with the cursor and with the source', ({ makeDb }) => {
    const { db, file } = makeDb(
      's.db',
      'CREATE TABLE issues (id INTEGER PRIMARY KEY, v); INSERT INTO issues VALUES (1, 1); CREATE TABLE kv (k PRIMARY KEY, v);',
    );
    enable(db, ['issues', 'kv']);
    const cursor = snapshot(db, ['Issues'], { onRow: () => {} }).cursor;
    for (const name of ['issues', 'Issues', 'ISSUES']) expect(changedSince(db, cursor, [name])).toEqual({ changed: false, lastSeq: 0 });
    runSqliteCli(file, 'UPDATE issues SET v = 2;');
    for (const name of ['issues', 'Issues', 'ISSUES']) expect(changedSince(db, cursor, [name])).toEqual({ changed: true, lastSeq: 1 });
    // Only ASCII folds, as in SQLite: the Kelvin sign is not K (toLowerCase would make it k and name kv).
    expect(changedSince(db, cursor, ['\u212Av'])).toEqual({ changed: true, rebuild: 'TABLE_UNTRACKED' });
    expect(changedSince(db, cursor, ['KV'])).toEqual({ changed: true, rebuild: 'TABLE_NOT_IN_CURSOR' });
  });

  test('one long-lived reader connection, polled over and over, notices every later write, bump, prune and DDL', ({ makeDb }) => {
    const { db: writer, file } = makeDb('s.db', SCHEMA);
    enable(writer, ['a', 'b'], { retention: 1024 });
    const reader = openDatabase(file, { readonly: true });
    const poll = (c: string) => {
      // Many polls on the same connection and token, as a real poller does.
      let last = changedSince(reader, c);
      for (let i = 0; i < 5; i++) last = changedSince(reader, c);
      return last;
    };
    let cursor = snapshot(reader, ['a', 'b'], { onRow: () => {} }).cursor;
    expect(poll(cursor).changed).toBe(false);
    writer.exec('UPDATE a SET v = 2 WHERE id = 1');
    expect(poll(cursor)).toEqual({ changed: true, lastSeq: 1 });
    cursor = readBatch(reader, cursor).to;
    expect(poll(cursor).changed).toBe(false);
    bump(writer, 'test');
    expect(poll(cursor)).toEqual({ changed: true, rebuild: 'GENERATION_CHANGED' });
    cursor = snapshot(reader, ['a', 'b'], { onRow: () => {} }).cursor;
    expect(poll(cursor).changed).toBe(false);
    const ins = writer.prepare('INSERT INTO b (v) VALUES (?)');
    writer.transaction(() => {
      for (let i = 0; i < 2100; i++) ins.run(i);
    })();
    expect(poll(cursor)).toEqual({ changed: true, rebuild: 'CURSOR_PRUNED' });
    cursor = snapshot(reader, ['a', 'b'], { onRow: () => {} }).cursor;
    expect(poll(cursor).changed).toBe(false);
    runSqliteCli(file, 'ALTER TABLE a ADD COLUMN extra;');
    expect(poll(cursor)).toEqual({ changed: true, rebuild: 'TABLE_UNARMED' });
    enable(writer, []);
    expect(poll(cursor)).toEqual({ changed: true, rebuild: 'SCHEMA_CHANGED' });
    disable(writer);
    expect(poll(cursor)).toEqual({ changed: true, rebuild: 'CAPTURE_ABSENT' });
    reader.close();
  });
});
