// a STRICT table's ANY column keeps -0.0 as written, like a column without a type: verify's note on 0.0 and -0.0 names it
import { test, expect, runCli, runPython } from '../../support/fixtures.ts';

test("verify names a STRICT table's ANY column among those where an update between 0.0 and -0.0 is not journaled", ({ tmp }) => {
  const src = `${tmp}/s.db`;
  const tgt = `${tmp}/t.db`;
  const py = (sql: string) =>
    runPython(`import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.executescript(sys.argv[2])\n`, [src, sql]);
  py('CREATE TABLE t (id INTEGER PRIMARY KEY, a ANY, r REAL) STRICT; INSERT INTO t VALUES (1, 0.0, 0.0);');
  expect(runCli(['enable', src, 't']).status).toBe(0);
  expect(runCli(['sync', src, tgt]).status).toBe(0);
  py('UPDATE t SET a = -0.0 WHERE id = 1;');
  expect(runCli(['sync', src, tgt]).status).toBe(0);
  const v = runCli(['verify', src, tgt]);
  // The column holds -0.0 (a REAL one stores 0): the note says why the row differs, and names a only.
  expect(v.stdout).toMatch(/note: an update between 0\.0 and -0\.0 in a of t /);
});
