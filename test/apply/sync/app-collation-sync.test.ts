// a mirror of a column declared with a collation the application registers fails with a message naming the column, the collation and the fix, not SQLite's bare error
import { test, expect, runCli, runPython } from '../../support/fixtures.ts';

test('sync of a table whose column uses an application collation says which column, which collation and what to do', ({ tmp }) => {
  const src = `${tmp}/s.db`;
  runPython(
    `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.create_collation('rev', lambda a, b: (a < b) - (a > b))
c.executescript("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT COLLATE rev); INSERT INTO t VALUES ('a', 'x'); CREATE TABLE u (k PRIMARY KEY, w);")
c.commit()
`,
    [src],
  );
  // enable takes the table: only a key is compared in capture's triggers; a map that leaves v out can be built.
  expect(runCli(['enable', src, 't', 'u']).status).toBe(0);
  const r = runCli(['sync', src, `${tmp}/t.db`]);
  const out = r.stdout + r.stderr;
  expect(out).not.toContain('SQLITE_ERROR_MISSING_COLLSEQ');
  expect(out).toContain('COLLATION_UNKNOWN');
  expect(out).toMatch(/column v of t is declared COLLATE rev/i);
  expect(out).toMatch(/BINARY, NOCASE or RTRIM/);
  const h = runCli(['health', `${tmp}/t.db`]);
  expect(h.stdout + h.stderr).not.toContain('SQLITE_ERROR_MISSING_COLLSEQ');
});
