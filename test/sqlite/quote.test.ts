import Database from 'better-sqlite3';
import fc from 'fast-check';
import { test, expect, describe } from '../support/fixtures.ts';
import { quoteIdent, quoteString } from '../../src/sqlite/index.ts';

/** Identifier-ish strings: quotes, spaces, unicode, keywords. NUL ends SQL text, so it is left out. */
const name = fc
  .oneof(
    fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
    fc.constantFrom(
      'select',
      'from',
      'WHERE',
      'order',
      'group',
      'table',
      'rowid',
      'NEW',
      'OLD',
      '"',
      '""',
      "'",
      ' ',
      'a b',
      'x"y',
      "it's",
      '表 🔑',
      '[x]',
      '`x`',
      '--',
      '/*',
      ';',
    ),
  )
  .filter((s) => !s.includes('\0') && !s.toLowerCase().startsWith('sqlite_'));

describe('identifier and string quoting', () => {
  test('quoteIdent doubles embedded double quotes', () => {
    expect(quoteIdent('plain')).toBe('"plain"');
    expect(quoteIdent('a"b')).toBe('"a""b"');
    expect(quoteIdent('"')).toBe('""""');
    expect(quoteString("it's")).toBe("'it''s'");
  });

  test('any name quoted with quoteIdent creates, and reads back, exactly that table and column', () => {
    const db = new Database(':memory:');
    try {
      fc.assert(
        fc.property(
          name,
          name.filter((c) => c.toLowerCase() !== 'other'),
          (table, column) => {
            db.exec(`CREATE TABLE ${quoteIdent(table)} (${quoteIdent(column)} PRIMARY KEY, other)`);
            try {
              const t = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all() as { name: string }[];
              expect(t).toEqual([{ name: table }]);
              const cols = db.prepare('SELECT name FROM pragma_table_info(?)').all(table) as { name: string }[];
              expect(cols.map((c) => c.name)).toEqual([column, 'other']);
              db.prepare(`INSERT INTO ${quoteIdent(table)} (${quoteIdent(column)}) VALUES (?)`).run('v');
              expect(db.prepare(`SELECT ${quoteIdent(column)} AS v FROM ${quoteIdent(table)}`).get()).toEqual({ v: 'v' });
            } finally {
              db.exec(`DROP TABLE ${quoteIdent(table)}`);
            }
          },
        ),
        { numRuns: 300 },
      );
    } finally {
      db.close();
    }
  });

  test('any text quoted with quoteString is read back as exactly that text', () => {
    const db = new Database(':memory:');
    try {
      fc.assert(
        fc.property(
          fc.string({ unit: 'binary' }).filter((s) => !s.includes('\0')),
          (s) => {
            expect(db.prepare(`SELECT ${quoteString(s)} AS v`).get()).toEqual({ v: s });
          },
        ),
        { numRuns: 300 },
      );
    } finally {
      db.close();
    }
  });
});
