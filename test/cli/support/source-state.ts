import fs from 'node:fs';
import { expect } from 'vitest';
import { runPython } from '../../support/fixtures.ts';
import { sha256 } from './cli.ts';

/*
 * What a command did to a source file, seen from outside: the main file's
 * bytes, the size of its -wal (a reader in WAL mode may leave an empty one
 * behind, as SQLite does; never one with frames), and PRAGMA journal_mode
 * as a separate connection (Python's sqlite3, read-only) reads it. And, for
 * the commands that may write, every table's rows and every schema object,
 * so a test can say exactly which of them changed.
 */

export interface FileState {
  readonly sha256: string;
  readonly walBytes: number;
  readonly journalMode: string;
}

export function fileState(file: string): FileState {
  const wal = `${file}-wal`;
  const state = { sha256: sha256(file), walBytes: fs.existsSync(wal) ? fs.statSync(wal).size : 0 };
  const journalMode = runPython(
    'import sqlite3, sys\nc = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)\nprint(c.execute("PRAGMA journal_mode").fetchone()[0])\nc.close()',
    [file],
  ).trim();
  return { ...state, journalMode };
}

export interface Contents {
  /** name -> sql of every schema object (tables, indexes, triggers). */
  readonly schema: Record<string, string | null>;
  /** table -> its rows, each as one exact string (quote(), TEXT as hex), sorted. */
  readonly rows: Record<string, string[]>;
}

/** Every table and schema object of a database, read by Python's sqlite3 (read-only). */
export function contents(file: string): Contents {
  const script = `
import sqlite3, sys, json
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
q = lambda n: '"' + n.replace('"', '""') + '"'
schema = {n: s for n, s in c.execute("SELECT name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_autoindex%'")}
rows = {}
for (t,) in c.execute("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%'").fetchall():
    cols = [r[1] for r in c.execute("SELECT * FROM pragma_table_info(?)", (t,))]
    cells = " || '|' || ".join("CASE typeof(%s) WHEN 'text' THEN 'T' || hex(%s) ELSE quote(%s) END" % (q(x), q(x), q(x)) for x in cols)
    rows[t] = sorted(r[0] for r in c.execute("SELECT %s FROM %s" % (cells, q(t))))
c.close()
print(json.dumps({"schema": schema, "rows": rows}))
`;
  return JSON.parse(runPython(script, [file])) as Contents;
}

/** The names (schema objects, then tables whose rows differ) that differ between two Contents. */
export function changedBetween(before: Contents, after: Contents): { readonly schema: string[]; readonly rows: string[] } {
  const differ = <T>(a: Record<string, T>, b: Record<string, T>) =>
    [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).sort();
  return { schema: differ(before.schema, after.schema), rows: differ(before.rows, after.rows) };
}

/** Asserts that a command left the source exactly as it was: bytes, WAL content and journal mode. */
export function expectUntouched(file: string, before: FileState, after_?: string): void {
  const after = fileState(file);
  const by = after_ === undefined ? '' : ` after ${after_}`;
  expect(after.journalMode, `journal mode${by}`).toBe(before.journalMode);
  expect(after.walBytes, `bytes in the -wal file${by}`).toBe(before.walBytes);
  expect(after.sha256, `bytes of the source file${by}`).toBe(before.sha256);
}

/** Sets a database's journal mode from Python (a user's own connection). */
export function setJournalMode(file: string, mode: 'delete' | 'wal'): void {
  const got = runPython(
    `import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nprint(c.execute("PRAGMA journal_mode = ${mode}").fetchone()[0])\nc.close()`,
    [file],
  ).trim();
  expect(got).toBe(mode);
}

/** Runs SQL from Python's sqlite3 (an app that knows nothing of sluice), committed. */
export function pythonWrite(file: string, sql: string): void {
  runPython('import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.executescript(sys.argv[2])\nc.commit()\nc.close()', [file, sql]);
}
