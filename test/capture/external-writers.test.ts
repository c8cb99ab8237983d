import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { journalEvents, eventShapes, tableCells, pythonExec, cell } from '../support/journal.ts';

/*
 * The same SQL, written by better-sqlite3 (sluice's own connection), by
 * Python's stdlib sqlite3 (SQLite 3.40.1) and by the sqlite3 CLI, none of
 * which load anything of sluice, must leave identical journals.
 */

const SCHEMA = `
CREATE TABLE t (id INTEGER PRIMARY KEY, v, n TEXT COLLATE NOCASE, r REAL);
CREATE TABLE "c ""k""" (a TEXT NOT NULL, "b é" INTEGER NOT NULL, x, PRIMARY KEY (a, "b é")) WITHOUT ROWID;
`;

// Only short REAL literals and exact arithmetic: their parse is identical in every SQLite version.
const WRITES = `
INSERT INTO t VALUES (1, 9223372036854775807, 'abc', 0.5);
INSERT INTO t VALUES (2, -9223372036854775808, 'x', 1e308);
INSERT INTO t VALUES (3, 1, '1', 1);
INSERT INTO t VALUES (4, 1.0, '', 2.5);
INSERT INTO t VALUES (5, '1', NULL, NULL);
INSERT INTO t VALUES (6, X'', CAST(X'FF41' AS TEXT), -0.25);
INSERT INTO t VALUES (7, 0.1 + 0.2, NULL, 1.0 / 3);
UPDATE t SET n = 'ABC' WHERE id = 1;
UPDATE t SET v = v, n = n, r = r;
UPDATE t SET v = 1.0 WHERE id = 3;
UPDATE t SET id = 10 WHERE id = 2;
INSERT INTO t VALUES (3, 'upsert', 'ignored', 0) ON CONFLICT (id) DO UPDATE SET v = excluded.v;
BEGIN; INSERT INTO t VALUES (99, 1, 1, 1); UPDATE t SET v = 'rolled back'; ROLLBACK;
SAVEPOINT s1; DELETE FROM t; ROLLBACK TO s1; RELEASE s1;
INSERT INTO "c ""k""" VALUES ('k', 1, X'00FF00'), ('k', 2, NULL);
UPDATE "c ""k""" SET "b é" = 3 WHERE "b é" = 1;
DELETE FROM "c ""k""";
DELETE FROM t WHERE id = 5;
`;

type Writer = (file: string) => void;

function setUp(makeDb: (name?: string, schema?: string) => { db: import('../../src/sqlite/index.ts').Db; file: string }, name: string) {
  const { db, file } = makeDb(name, SCHEMA);
  enable(db, ['t', 'c "k"']);
  return { db, file };
}

describe('external writers', () => {
  test('Python sqlite3 and the sqlite3 CLI journal exactly what better-sqlite3 journals', ({ makeDb }) => {
    const writers: Record<string, Writer | null> = {
      'better-sqlite3': null,
      python: (file) => pythonExec(file, WRITES),
      cli: (file) => runSqliteCli(file, WRITES),
    };
    const results: Record<string, { events: ReturnType<typeof journalEvents>; t: unknown; c: unknown }> = {};
    for (const [name, write] of Object.entries(writers)) {
      const { db, file } = setUp(makeDb, `${name}.db`);
      if (write === null) db.exec(WRITES);
      else write(file);
      results[name] = { events: journalEvents(db), t: tableCells(db, 't'), c: tableCells(db, 'c "k"') };
    }
    const reference = results['better-sqlite3'];
    if (reference === undefined) throw new Error('unreachable');

    // The reference journal is what the contract says, so equality below is not vacuous.
    expect(reference.events.map((e) => `${e.seq}:${e.table}:${e.op}`)).toEqual([
      '1:t:insert',
      '2:t:insert',
      '3:t:insert',
      '4:t:insert',
      '5:t:insert',
      '6:t:insert',
      '7:t:insert',
      '8:t:update', // NOCASE column changed only in case
      '9:t:update', // 1 -> 1.0 in an untyped column
      '10:t:update', // key change: one event
      '11:t:update', // ON CONFLICT DO UPDATE
      '12:c "k":insert',
      '13:c "k":insert',
      '14:c "k":update',
      '15:c "k":delete',
      '16:c "k":delete',
      '17:t:delete',
    ]);
    expect(reference.events[5]?.after).toEqual([
      cell.int(6),
      cell.blob(new Uint8Array()),
      cell.text(Buffer.from([0xff, 0x41])),
      cell.real(-0.25),
    ]);
    expect(reference.events[9]?.before?.[0]).toBe(cell.int(2));
    expect(reference.events[9]?.after?.[0]).toBe(cell.int(10));

    for (const name of ['python', 'cli']) {
      const r = results[name];
      expect(r?.t, `${name}: source table t`).toEqual(reference.t);
      expect(r?.c, `${name}: source table c "k"`).toEqual(reference.c);
      // seq included: the same history gives the same seqs; ts is the only field left out.
      expect(
        r?.events.map((e) => ({ seq: e.seq, ...(eventShapes([e])[0] as object) })),
        `${name}: journal`,
      ).toEqual(reference.events.map((e) => ({ seq: e.seq, ...(eventShapes([e])[0] as object) })));
      expect(r?.events.every((e) => e.unused.every((c) => c === cell.null()))).toBe(true);
    }
  });

  test('every event carries a wall-clock time in milliseconds, whoever wrote it', ({ makeDb }) => {
    const { db, file } = setUp(makeDb, 'ts.db');
    const before = Date.now();
    pythonExec(file, "INSERT INTO t VALUES (1, 'p', 'p', 1)");
    runSqliteCli(file, "INSERT INTO t VALUES (2, 'c', 'c', 1);");
    db.prepare("INSERT INTO t VALUES (3, 'b', 'b', 1)").run();
    const after = Date.now();
    const ts = (
      db.prepare('SELECT CAST(round((ts - 2440587.5) * 86400000) AS INTEGER) AS ms FROM _sluice_journal ORDER BY seq').all() as {
        ms: bigint;
      }[]
    ).map((r) => Number(r.ms));
    expect(ts).toHaveLength(3);
    for (const stamp of ts) {
      // A correctness check of the recorded clock (not a speed check): julianday()
      // has millisecond resolution; allow 1 ms of rounding either side.
      expect(stamp).toBeGreaterThanOrEqual(before - 1);
      expect(stamp).toBeLessThanOrEqual(after + 1);
    }
  });
});
