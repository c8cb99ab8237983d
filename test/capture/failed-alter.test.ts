// a failed or refused alter changes nothing and no write of a concurrent writer escapes the journal
import { spawn } from 'node:child_process';
import { test, expect, describe, PYTHON } from '../support/fixtures.ts';
import { enable, alter, verifyCapture, readDdlLog } from '../../src/capture/index.ts';
import type { Db } from '../../src/sqlite/index.ts';

const SCHEMA = `
CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT);
CREATE TABLE other (id INTEGER PRIMARY KEY, t_id INTEGER REFERENCES t (id) ON DELETE CASCADE);
INSERT INTO t VALUES (1, 'a1', 'b1'), (2, 'a2', 'b2');
INSERT INTO other VALUES (1, 1);`;

/** Everything an alter could change: the schema (with row order), the capture tables, the journal, schema_version. */
function snapshot(db: Db): unknown {
  const all = (sql: string) => db.prepare(sql).raw().all();
  return {
    schema: all('SELECT rowid, type, name, tbl_name, rootpage, sql FROM main.sqlite_schema ORDER BY rowid'),
    tables: all('SELECT * FROM _sluice_tables ORDER BY tid'),
    state: all('SELECT * FROM _sluice_state'),
    journal: all('SELECT * FROM _sluice_journal ORDER BY seq'),
    rows: all('SELECT * FROM t ORDER BY id'),
    version: db.pragma('schema_version', { simple: true }),
  };
}

describe('an alter that cannot complete', () => {
  test.for([
    [
      'a second statement that does not compile',
      'ALTER TABLE t DROP COLUMN b; ALTER TABLE t ADD COLUMN',
      'ALTER_FAILED',
      /statement 2 \(ALTER TABLE t ADD COLUMN\) failed/,
    ],
    [
      'a second statement that fails at run time',
      'ALTER TABLE t DROP COLUMN b; ALTER TABLE nope ADD COLUMN c',
      'ALTER_FAILED',
      /statement 2 .*no such table/,
    ],
    ['a write to the captured table', 'ALTER TABLE t ADD COLUMN c; UPDATE t SET c = 1', 'ALTER_REFUSED', /statement 2 .*captured table t/],
    [
      'a trigger that writes the captured table',
      'CREATE TABLE log (x); CREATE TRIGGER log_t AFTER INSERT ON log BEGIN UPDATE t SET a = 1; END; INSERT INTO log VALUES (1)',
      'ALTER_REFUSED',
      /statement 3 .*captured table t/,
    ],
    ['ATTACH', "ATTACH 'x.db' AS x", 'ALTER_REFUSED', /another database file/],
    ["sluice's own tables", 'ALTER TABLE t ADD COLUMN c; DELETE FROM _sluice_journal', 'ALTER_REFUSED', /statement 2 .*_sluice_/],
    ['a PRAGMA', 'PRAGMA writable_schema = ON', 'ALTER_REFUSED', /PRAGMA/],
    ['transaction control', 'COMMIT; ALTER TABLE t ADD COLUMN c', 'ALTER_REFUSED', /write transaction/],
    [
      'a table left with no primary key',
      'CREATE TABLE t2 (id, a, b); INSERT INTO t2 SELECT * FROM t; DROP TABLE t; ALTER TABLE t2 RENAME TO t',
      'ALTER_REFUSED',
      /could no longer be captured.*PRIMARY KEY/,
    ],
  ] as const)('%s changes nothing: schema, triggers, capture tables and journal are as they were', ([, sql, code, message], { makeDb }) => {
    const { db } = makeDb('app.db', SCHEMA);
    enable(db, ['t', 'other']);
    db.exec("UPDATE t SET a = 'journaled' WHERE id = 2");
    const before = snapshot(db);
    let caught: unknown;
    try {
      alter(db, sql);
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ code, message: expect.stringMatching(message) });
    expect((caught as Error).message).toContain('Nothing was changed');
    expect(snapshot(db)).toEqual(before);
    expect(verifyCapture(db).ok).toBe(true);
    expect(readDdlLog(db)).toEqual([]);
    expect(Number(db.pragma('foreign_keys', { simple: true }))).toBe(1);
  });
});

/* A Python writer that inserts rows one transaction at a time, as an app would, knowing nothing of sluice. */
const WRITER = `
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
for i in range(1000, 1000 + int(sys.argv[2])):
    c.execute("INSERT INTO t (id, a) VALUES (?, ?)", (i, 'py%d' % i))
    time.sleep(0.002)
c.close()
`;

describe('a live writer', () => {
  test("a Python writer's inserts before, during and after an alter are all journaled, and the alter sits between them", async ({
    makeDb,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t']);
    const count = 300;
    const writer = spawn(PYTHON, ['-c', WRITER, file, String(count)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    writer.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => writer.on('exit', resolve));
    const written = () => Number(db.prepare('SELECT count(*) FROM t WHERE id >= 1000').pluck().get());
    while (written() < 50) await new Promise((r) => setTimeout(r, 5));
    const r = alter(db, 'ALTER TABLE t DROP COLUMN b; ALTER TABLE t ADD COLUMN c TEXT');
    expect(await exited, stderr).toBe(0);

    const journaled = db.prepare('SELECT seq, c0 FROM _sluice_journal WHERE op = 1 ORDER BY seq').raw().all() as [bigint, bigint][];
    const ids = db.prepare('SELECT id FROM t WHERE id >= 1000 ORDER BY id').pluck().all();
    expect(ids).toHaveLength(count);
    expect(journaled.map(([, id]) => id).sort((x, y) => Number(x - y))).toEqual(ids);
    // Some were written before the alter and some after: the alter's seq splits them.
    const split = journaled.filter(([seq]) => Number(seq) <= r.seq).length;
    expect(split).toBeGreaterThanOrEqual(50);
    expect(split).toBeLessThan(count);
    expect(verifyCapture(db).ok).toBe(true);
  });
});
