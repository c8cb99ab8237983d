// capture takes a table as wide as its journal can hold, and refuses a wider one by name, with the fix
import path from 'node:path';
import { afterAll } from 'vitest';
import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, scalar, expectOneLineError } from '../cli/support/cli.ts';

/*
 * The journal holds both images of an update, so a table of n captured
 * columns needs 2n journal columns beside its own five (seq, tid, op, ts,
 * mask): SQLite's limit of 2000 columns a table makes 997 the widest. The
 * update trigger tests each column for a change; as one left-deep OR chain
 * that passed SQLite's expression depth (1000) at 997 columns, so enable of
 * such a table, or an ALTER that made a 996-column table one column wider,
 * failed with a raw "Expression tree is too large"; and a table of 998
 * columns or more failed with SQLite's "too many columns on
 * sqlite_altertab__sluice_journal", naming neither the table nor a fix.
 */

const dir = makeDir();
afterAll(() => removeDir(dir));

/** A source at `file` with table t of `width` columns (id and c1..), one row. */
function source(file: string, width: number): string {
  runSqliteCli(
    file,
    `CREATE TABLE t (id INTEGER PRIMARY KEY, ${Array.from({ length: width - 1 }, (_, i) => `c${i + 1}`).join(', ')}); INSERT INTO t (id, c1) VALUES (1, 'a');`,
  );
  return file;
}

describe('the widest table capture takes', () => {
  test('a 996-column table made 997 columns wide by sluice alter stays armed, and an update of the new column is journaled', async () => {
    const src = source(path.join(dir, 'w996.db'), 996);
    expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
    const r = await runCliAsync(['alter', src, 'ALTER TABLE t ADD COLUMN extra TEXT']);
    expect(r.stderr).not.toMatch(/SQLITE_|Expression tree/);
    expect(r.status, r.stderr).toBe(0);
    // Another program's update of the 997th column: journaled.
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE t SET extra = 'e' WHERE id = 1")
con.commit()`,
      [src],
    );
    expect(scalar(src, 'SELECT count(*) FROM _sluice_journal WHERE op = 2')).toBe(1n);
  });

  test('998 columns: enable refuses the table by name (TABLE_TOO_WIDE), with the fix, and writes nothing', async () => {
    const src = source(path.join(dir, 'w998.db'), 998);
    const r = await runCliAsync(['enable', src, 't']);
    expectOneLineError(r, 'TABLE_TOO_WIDE');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/Table t: .*998 columns.*at most 997.*--exclude/);
    expect(scalar(src, "SELECT count(*) FROM sqlite_master WHERE name LIKE '\\_sluice\\_%' ESCAPE '\\'")).toBe(0n);
  });

  test('sluice alter that would make a captured table wider than 997 columns is refused by name and rolled back', async () => {
    const src = path.join(dir, 'w996.db');
    const r = await runCliAsync(['alter', src, 'ALTER TABLE t ADD COLUMN more TEXT']);
    expectOneLineError(r, 'TABLE_TOO_WIDE');
    expect(scalar(src, "SELECT count(*) FROM pragma_table_info('t')")).toBe(997n);
  });
});
