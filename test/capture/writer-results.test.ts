import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { journalEvents } from '../support/journal.ts';
import type { Db } from '../../src/sqlite/index.ts';

/*
 * Capture triggers write the journal and _sluice_tables, yet a writer's
 * changes() and last_insert_rowid() must stay exactly what they would be
 * without capture. The journal is pushed ahead first (seq 1..50 on another
 * table) so a leaked journal rowid or trigger row count is visible.
 */

const SCHEMA = `
CREATE TABLE other (id INTEGER PRIMARY KEY, v);
CREATE TABLE t (id INTEGER PRIMARY KEY, v, u UNIQUE);
`;

function setUp(makeDb: (name?: string, schema?: string) => { db: Db; file: string }): { db: Db; file: string } {
  const made = makeDb('w.db', SCHEMA);
  enable(made.db, ['other', 't']);
  const ins = made.db.prepare('INSERT INTO other (v) VALUES (?)');
  for (let i = 0; i < 50; i++) ins.run(i);
  expect(journalEvents(made.db)).toHaveLength(50);
  return made;
}

// Each statement, and what changes() / last_insert_rowid() must be after it, without capture.
const STEPS: readonly [string, number, number][] = [
  ["INSERT INTO t (v, u) VALUES ('a', 1)", 1, 1],
  ["INSERT INTO t (v, u) VALUES ('b', 2), ('c', 3), ('d', 4)", 3, 4],
  ["UPDATE t SET v = 'x'", 4, 4],
  ["UPDATE t SET v = 'x' WHERE id <= 2", 2, 4], // no-op rows still count as changed rows
  ["INSERT INTO t (id, v, u) VALUES (2, 'up', 9) ON CONFLICT (id) DO UPDATE SET v = excluded.v", 1, 4],
  ['DELETE FROM t WHERE id > 2', 2, 4],
  ["INSERT INTO t (id, v, u) VALUES (100, 'e', 5)", 1, 100],
  ['DELETE FROM t', 3, 100],
];

describe("the writer's changes() and last_insert_rowid()", () => {
  test('better-sqlite3 run() reports the same changes and lastInsertRowid as without capture', ({ makeDb }) => {
    const { db } = setUp(makeDb);
    for (const [sql, changes, rowid] of STEPS) {
      const info = db.prepare(sql).run();
      expect({ sql, changes: info.changes, rowid: Number(info.lastInsertRowid) }).toEqual({ sql, changes, rowid });
      const inSql = db.prepare('SELECT changes() AS c, last_insert_rowid() AS r').get() as { c: bigint; r: bigint };
      expect({ sql, changes: Number(inSql.c), rowid: Number(inSql.r) }).toEqual({ sql, changes, rowid });
    }
    // The triggers really ran: 50 + 1 + 3 + 4 + 0 + 1 + 2 + 1 + 3 events.
    expect(journalEvents(db)).toHaveLength(65);
  });

  test('Python sqlite3 sees the same rowcount, lastrowid, changes() and last_insert_rowid() as without capture', ({ makeDb }) => {
    const { db, file } = setUp(makeDb);
    const out = runPython(
      `
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
res = []
for sql in json.loads(sys.argv[2]):
    cur = conn.execute(sql)
    c, r = conn.execute('SELECT changes(), last_insert_rowid()').fetchone()
    res.append({'rowcount': cur.rowcount, 'changes': c, 'rowid': r, 'lastrowid': cur.lastrowid if sql.startswith('INSERT') else None})
print(json.dumps(res))
`,
      [file, JSON.stringify(STEPS.map((s) => s[0]))],
    );
    const got = JSON.parse(out) as unknown[];
    expect(got).toEqual(
      STEPS.map(([sql, changes, rowid]) => ({ rowcount: changes, changes, rowid, lastrowid: sql.startsWith('INSERT') ? rowid : null })),
    );
    expect(journalEvents(db)).toHaveLength(65);
  });

  test('the sqlite3 CLI sees the same changes() and last_insert_rowid() as without capture', ({ makeDb }) => {
    const { db, file } = setUp(makeDb);
    const script = STEPS.map(([sql]) => `${sql};\nSELECT changes() || ',' || last_insert_rowid();`).join('\n');
    const lines = runSqliteCli(file, script).trim().split('\n');
    expect(lines).toEqual(STEPS.map(([, c, r]) => `${c},${r}`));
    expect(journalEvents(db)).toHaveLength(65);
  });
});
