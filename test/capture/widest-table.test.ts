// capture takes a table as wide as its journal can hold, and refuses a wider one by name, with the fix
import path from 'node:path';
import { afterAll } from 'vitest';
import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, scalar } from '../cli/support/cli.ts';

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
  test('997 columns: enable arms it, and an update of its last column by another program is journaled', async () => {
    const src = source(path.join(dir, 'w997.db'), 997);
    const r = await runCliAsync(['enable', src, 't']);
    expect(r.stderr).not.toMatch(/SQLITE_|Expression tree/);
    expect(r.status, r.stderr).toBe(0);
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE t SET c996 = 'z' WHERE id = 1")
con.commit()`,
      [src],
    );
    expect(scalar(src, 'SELECT count(*) FROM _sluice_journal WHERE op = 2')).toBe(1n);
  });

  test('a 996-column table altered to 997 by sluice alter stays armed', async () => {
    const src = source(path.join(dir, 'w996.db'), 996);
    expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
    const r = await runCliAsync(['alter', src, 'ALTER TABLE t ADD COLUMN extra TEXT']);
    expect(r.stderr).not.toMatch(/SQLITE_|Expression tree/);
    expect(r.status, r.stderr).toBe(0);
    runSqliteCli(src, "UPDATE t SET extra = 'e' WHERE id = 1;");
    expect(scalar(src, 'SELECT count(*) FROM _sluice_journal WHERE op = 2')).toBe(1n);
  });
});
