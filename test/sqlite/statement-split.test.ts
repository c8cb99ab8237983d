// a script is split into statements at the semicolons that end one
import { test, expect, describe } from '../support/fixtures.ts';
import { forEachStatement, leadingKeywords } from '../../src/sqlite/index.ts';

describe('forEachStatement', () => {
  test("splits at each ';' outside quotes and comments, keeps a trigger body whole, and runs each statement before the next is compiled", ({
    makeDb,
  }) => {
    const { db } = makeDb();
    const script = `CREATE TABLE t (id INTEGER PRIMARY KEY, "a;b" TEXT);
      -- a comment; with a semicolon
      INSERT INTO t VALUES (1, 'x;y''z');
      /* another ; one */
      CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN
        UPDATE t SET "a;b" = 'in; trigger' WHERE id = NEW.id;
        SELECT 1;
      END;
      INSERT INTO [t] (id, \`a;b\`) VALUES (2, 'q') ;;
      SELECT count(*) FROM t`;
    const seen: [number, string][] = [];
    const n = forEachStatement(db, script, (text, i) => {
      seen.push([i, leadingKeywords(text, 2).join(' ')]);
      const stmt = db.prepare(text);
      if (stmt.reader) stmt.all();
      else stmt.run();
    });
    expect(n).toBe(5);
    expect(seen).toEqual([
      [1, 'CREATE TABLE'],
      [2, 'INSERT INTO'],
      [3, 'CREATE TRIGGER'],
      [4, 'INSERT INTO'],
      [5, 'SELECT COUNT'],
    ]);
    expect(db.prepare('SELECT id, "a;b" FROM t ORDER BY id').raw().all()).toEqual([
      [1n, "x;y'z"],
      [2n, 'in; trigger'],
    ]);
  });

  test('a script of only comments and semicolons has no statement', ({ makeDb }) => {
    const { db } = makeDb();
    expect(forEachStatement(db, ' ; -- nothing\n /* here */ ;', () => expect.unreachable())).toBe(0);
  });
});
