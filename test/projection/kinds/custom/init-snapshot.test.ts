// a custom init gets every snapshot row exactly across pages while it writes
import path from 'node:path';
import { test, expect } from '../../../support/fixtures.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { snapshot } from '../../../../src/feed/index.ts';
import { toBindable, toJsonValue, type SqlValue } from '../../../../src/sqlite/index.ts';
import type { Row } from '../../../../src/feed/index.ts';
import type { CustomHandler } from '../../../../src/projection/index.ts';

/*
 * A custom handler's init runs its own statements (through ctx.db) while it
 * takes the snapshot rows, so they are read in pages with no statement open
 * in between. Pages must not lose exactness: TEXT that is not valid UTF-8
 * stays its bytes (a RawText), also as the key a WITHOUT ROWID table is
 * paged by, and no row is skipped or repeated at a page boundary.
 */

const SCHEMA = `
  CREATE TABLE plain (id INTEGER PRIMARY KEY, body TEXT, extra);
  CREATE TABLE keyed (k TEXT PRIMARY KEY, body) WITHOUT ROWID;`;

const ROWS = 1203; // more than two pages of 500

function fill(db: import('../../../../src/sqlite/index.ts').Db): void {
  db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS})
    INSERT INTO plain SELECT i, CASE WHEN i % 7 = 0 THEN CAST(x'ff41' || CAST(i AS BLOB) AS TEXT) ELSE 'body ' || i END, CASE WHEN i % 5 = 0 THEN x'00ff' ELSE i * 1.5 END FROM n`);
  // Keys around the page boundaries are malformed UTF-8 (bytes 0xfe/0xff never occur in UTF-8).
  db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS})
    INSERT INTO keyed SELECT CASE WHEN i % 3 = 0 THEN CAST(x'fe' || CAST(printf('%05d', i) AS BLOB) AS TEXT) ELSE printf('k%05d', i) END,
                             CASE WHEN i % 4 = 0 THEN CAST(x'c3' AS TEXT) ELSE i END FROM n`);
}

function collector(table: string) {
  const seen: Row[] = [];
  const handler: CustomHandler = {
    version: '1',
    async init(rows, { db }) {
      await db.schema.createTable(`${table}_copy`).addColumn('n', 'integer').addColumn('body', 'blob').execute();
      let n = 0;
      for (const row of rows) {
        seen.push(row);
        // A write between rows: the reader must not hold a statement open here.
        await db
          .insertInto(`${table}_copy`)
          .values({ n: n++, body: toBindable(row.body ?? null) })
          .execute();
      }
    },
    async apply() {},
  };
  return { seen, handler };
}

test('a custom init gets every snapshot row once, exact to the byte, across page boundaries, while it writes through ctx.db', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb('source.db', SCHEMA);
  fill(db);
  enable(db, ['plain', 'keyed']);
  const plain = collector('plain');
  const keyed = collector('keyed');
  const report = await sync(file, path.join(tmp, 'target.db'), {
    projections: [
      { name: 'plain_log', source: 'plain', kind: 'custom', handler: plain.handler },
      { name: 'keyed_log', source: 'keyed', kind: 'custom', handler: keyed.handler },
    ],
  });
  expect(report.projections.map((p) => [p.name, p.state, p.snapshotRows])).toEqual([
    ['plain_log', 'active', ROWS],
    ['keyed_log', 'active', ROWS],
  ]);

  // The same rows as the streaming snapshot reads, value for value in the lossless JSON encoding.
  const expected: Record<string, string[]> = { plain: [], keyed: [] };
  snapshot(db, ['plain', 'keyed'], { onRow: (t, row) => expected[t.name]?.push(JSON.stringify(row.map((v: SqlValue) => toJsonValue(v)))) });
  const got = (rows: Row[], cols: string[]) => rows.map((r) => JSON.stringify(cols.map((c) => toJsonValue(r[c] ?? null))));
  expect(got(plain.seen, ['id', 'body', 'extra']).sort()).toEqual([...(expected.plain ?? [])].sort());
  expect(got(keyed.seen, ['k', 'body']).sort()).toEqual([...(expected.keyed ?? [])].sort());
  // Exactly once each (no repeat at a page boundary), and the malformed keys are there as bytes.
  expect(new Set(got(keyed.seen, ['k'])).size).toBe(ROWS);
  expect(keyed.seen.filter((r) => typeof r.k !== 'string').length).toBe(Math.floor(ROWS / 3));
});

test('pages follow the primary key index: a key compared with BINARY on a NOCASE column ("a" and "A" are two rows) loses no row, while keyed kinds refuse that table', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb('source.db', 'CREATE TABLE n (name TEXT COLLATE NOCASE, v, PRIMARY KEY (name COLLATE BINARY)) WITHOUT ROWID');
  db.exec(`WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 601)
    INSERT INTO n SELECT printf('k%04d', x), x FROM i UNION ALL SELECT printf('K%04d', x), -x FROM i UNION ALL SELECT 'a', 0`);
  // 'a' first, then the pairs: page boundaries (500, 1000) fall between the two rows of a pair.
  enable(db, ['n']);
  const c = collector('n');
  const r = await sync(file, path.join(tmp, 'target.db'), {
    projections: [{ name: 'log', source: 'n', kind: 'custom', handler: c.handler }],
  });
  expect(r.projections[0]).toMatchObject({ state: 'active', snapshotRows: 1203 });
  expect(new Set(c.seen.map((row) => row.name)).size).toBe(1203);
  const refused = await sync(file, path.join(tmp, 'mirror.db'), { projections: [{ name: 'm', source: 'n', kind: 'mirror' }] }).then(
    () => undefined,
    (e: unknown) => e as { code?: string; message?: string },
  );
  expect(refused?.code).toBe('KEY_COLLATION_MISMATCH');
  expect(refused?.message).toMatch(/primary key of n compares name with COLLATE BINARY, but the column is declared COLLATE NOCASE/);
});
