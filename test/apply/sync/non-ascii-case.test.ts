// tables and columns that differ only in non ascii case are kept apart
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { journalStartCursor, readBatch } from '../../../src/feed/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';

/*
 * SQLite folds only ASCII letters when it compares names: `é` and `É` are
 * two tables (and two columns of one table), while `Foo` and `FOO` are one.
 * sluice must match names the same way, not with JavaScript's toLowerCase.
 */

const SCHEMA = `
CREATE TABLE "é" (id INTEGER PRIMARY KEY, v TEXT);
CREATE TABLE "É" (id INTEGER PRIMARY KEY, v TEXT);
CREATE TABLE cols (id INTEGER PRIMARY KEY, "é" TEXT COLLATE NOCASE, "É" TEXT);
`;

describe('names that differ only in non-ASCII case', () => {
  test('a batch for table é holds only its events, not those of É', ({ makeDb }) => {
    const { db } = makeDb('src.db', SCHEMA);
    enable(db, ['é', 'É']);
    const start = journalStartCursor(db);
    db.exec(`INSERT INTO "é" VALUES (1, 'small'); INSERT INTO "É" VALUES (1, 'big'), (2, 'big')`);
    expect(readBatch(db, start, { tables: ['é'] }).events.map((e) => [e.table, e.key])).toEqual([['é', [1n]]]);
    expect(readBatch(db, start, { tables: ['É'] }).events.map((e) => e.table)).toEqual(['É', 'É']);
  });

  test('a mirror of a table with columns é and É keeps both, each with its own collation', async ({ makeDb, tmp }) => {
    const { db, file } = makeDb('src.db', SCHEMA);
    enable(db, ['cols']);
    db.exec(`INSERT INTO cols VALUES (1, 'a', 'b')`);
    const tgt = path.join(tmp, 'cache.db');
    const r = await sync(file, tgt);
    expect(r.projections.map((p) => [p.name, p.state])).toEqual([['cols', 'active']]);
    db.exec(`UPDATE cols SET "É" = 'c'`);
    await sync(file, tgt);
    expect((await verify(file, tgt)).ok).toBe(true);
    const t = openDatabase(tgt, { readonly: true });
    try {
      expect(String(t.prepare("SELECT sql FROM sqlite_schema WHERE name = 'cols'").pluck().get())).toMatch(
        /"é" TEXT COLLATE NOCASE, "É" TEXT,/,
      );
      expect(t.prepare('SELECT id, "é", "É" FROM cols').raw().all()).toEqual([[1n, 'a', 'c']]);
    } finally {
      t.close();
    }
  });
});
