import { test, expect, describe } from '../support/fixtures.ts';
import { enable, status, verifyCapture } from '../../src/capture/index.ts';
import { journalEvents, pythonExec, rowCells, tableCells, cell } from '../support/journal.ts';
import { quoteIdent } from '../../src/sqlite/index.ts';

/*
 * Tables and columns whose names need quoting: double quotes, single
 * quotes, spaces, unicode, SQL keywords, and names that collide with words
 * the trigger SQL itself uses (NEW, OLD, rowid, the journal's seq/c0).
 */

const TABLES: readonly { name: string; ddl: string; key: readonly string[] }[] = [
  {
    name: 'my "quoted" table',
    ddl: 'CREATE TABLE "my ""quoted"" table" ("x""y" INTEGER NOT NULL, "sp ace" TEXT NOT NULL, "it\'s" , PRIMARY KEY ("sp ace", "x""y"))',
    key: ['sp ace', 'x"y'],
  },
  {
    name: '表 🔑',
    ddl: 'CREATE TABLE "表 🔑" ("ключ" TEXT NOT NULL, "值", "Ä" PRIMARY KEY NOT NULL) WITHOUT ROWID',
    key: ['Ä'],
  },
  {
    name: 'select',
    ddl: 'CREATE TABLE "select" ("from" INTEGER PRIMARY KEY, "where", "NEW", "OLD", "rowid", "seq", "c0", "order")',
    key: ['from'],
  },
  {
    name: "it's",
    // A nullable text key: the trigger's RAISE message quotes this name as a string literal.
    ddl: `CREATE TABLE "it's" ("k'ey" TEXT PRIMARY KEY, v)`,
    key: ["k'ey"],
  },
];

describe('quoted, unicode and keyword identifiers', () => {
  test('each table is captured with its key columns in key order and every image matches its row', ({ makeDb }) => {
    const { db, file } = makeDb('q.db', TABLES.map((t) => `${t.ddl};`).join('\n'));
    enable(
      db,
      TABLES.map((t) => t.name),
    );
    const s = status(db);
    expect(s.tables.map((t) => [t.name, t.keyColumns, t.armed])).toEqual(TABLES.map((t) => [t.name, t.key, true]));

    const q = (n: string) => quoteIdent(n);
    const writes = `
INSERT INTO ${q('my "quoted" table')} VALUES (1, 'a b', 'x'), (2, 'a b', 'y');
UPDATE ${q('my "quoted" table')} SET ${q('sp ace')} = 'c d' WHERE ${q('x"y')} = 2;
INSERT INTO ${q('表 🔑')} VALUES ('ключ', '值', 'Ä1');
UPDATE ${q('表 🔑')} SET ${q('Ä')} = 'Ä2';
INSERT INTO ${q('select')} VALUES (7, 'w', 'new', 'old', 'r', 's', 'c', 'o');
UPDATE ${q('select')} SET ${q('NEW')} = 'NEW2', ${q('rowid')} = 'r2';
INSERT INTO ${q("it's")} VALUES ('k1', 1);
DELETE FROM ${q('my "quoted" table')} WHERE ${q('x"y')} = 1;
`;
    // An external writer: the trigger SQL itself must handle every name.
    pythonExec(file, writes);
    const events = journalEvents(db);
    expect(events.map((e) => `${e.table}:${e.op}`)).toEqual([
      'my "quoted" table:insert',
      'my "quoted" table:insert',
      'my "quoted" table:update',
      '表 🔑:insert',
      '表 🔑:update',
      'select:insert',
      'select:update',
      "it's:insert",
      'my "quoted" table:delete',
    ]);
    // The last image of each surviving row equals the row itself.
    expect(events[2]?.after).toEqual(rowCells(db, 'my "quoted" table', `${q('x"y')} = 2`));
    expect(events[4]?.before).toEqual([cell.text('ключ'), cell.text('值'), cell.text('Ä1')]);
    expect(events[4]?.after).toEqual(tableCells(db, '表 🔑')[0]);
    expect(events[6]?.after).toEqual(rowCells(db, 'select', `${q('from')} = 7`));
    expect(events[6]?.after).toEqual([
      cell.int(7),
      cell.text('w'),
      cell.text('NEW2'),
      cell.text('old'),
      cell.text('r2'),
      cell.text('s'),
      cell.text('c'),
      cell.text('o'),
    ]);
    expect(events[7]?.after).toEqual([cell.text('k1'), cell.int(1)]);
    expect(events[8]?.before).toEqual([cell.int(1), cell.text('a b'), cell.text('x')]);
    expect(verifyCapture(db).ok).toBe(true);
  });

  test("a NULL written into the nullable key of a table whose name has a ' fails with sluice's message", ({ makeDb }) => {
    const { db } = makeDb('q.db', `${TABLES[3]?.ddl};`);
    enable(db, ["it's"]);
    expect(() => db.exec(`INSERT INTO "it's" VALUES (NULL, 1)`)).toThrow("sluice: primary key of it's must not be NULL");
  });
});
