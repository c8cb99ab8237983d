// a segment whose schema's root pages or meta entries were edited is refused, though its pages digest as before
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { cli, makeSource } from '../apply/support/target.ts';
import { openDatabase } from '../../src/sqlite/index.ts';

/*
 * The page digest leaves out page 1 (the schema, whose SQL is checked
 * exactly) and the meta table's pages. Root pages swapped between two
 * tables put one table's rows in another; a snapshot segment's meta seqs
 * and cursors moved to the next segment's made an import skip that batch
 * as applied. Both imported with exit 0 and a wrong target; the frame
 * digest covers them.
 */

const SWAP = `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
r = dict(db.execute("SELECT name, rootpage FROM sqlite_schema"))
db.execute("PRAGMA writable_schema = ON")
db.execute("UPDATE sqlite_schema SET rootpage = ? WHERE name = 'segment_rows_1'", (r['segment_rows_2'],))
db.execute("UPDATE sqlite_schema SET rootpage = ? WHERE name = 'segment_rows_2'", (r['segment_rows_1'],))
db.commit()
`;
const META = `
import sqlite3, sys
a = sqlite3.connect(sys.argv[1])
b = sqlite3.connect(sys.argv[2])
c = b.execute("SELECT value FROM segment WHERE name = 'cursor'").fetchone()[0]
a.execute("UPDATE segment SET value = ? WHERE name IN ('cursor', 'snapshot_cursor')", (c,))
a.execute("UPDATE segment SET value = 1 WHERE name IN ('snapshot_seq', 'from_seq', 'to_seq')")
a.commit()
`;

function segments(folder: string): string[] {
  return fs
    .readdirSync(folder)
    .filter((f) => f.endsWith('.segment'))
    .sort()
    .map((f) => path.join(folder, f));
}

function exported(src: string, folder: string): void {
  const r = cli(['export', src, '--out', folder, '--format', 'segment']);
  expect(r.status, r.stderr).toBe(0);
}

function refused(target: string, from: string): void {
  const r = cli(['import', target, from]);
  expect(r.status, r.stdout).toBe(1);
  expect(r.stderr).toContain('IMPORT_SEGMENT_DIGEST');
  expect(r.stderr).toContain(path.basename(segments(from)[0] ?? from));
  expect(fs.existsSync(target) ? tables(target) : [], 'nothing imported').not.toContain('a');
}

function tables(file: string): string[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[];
  } finally {
    db.close();
  }
}

describe("a segment's frame: its schema's root pages and its meta", () => {
  test("two tables' root pages swapped", ({ tmp, makeDb }) => {
    const src = makeSource(
      makeDb,
      'CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT);',
      ['a', 'b'],
      {
        seed: "INSERT INTO a VALUES (1, 'from a'); INSERT INTO b VALUES (1, 'from b');",
      },
    );
    const folder = path.join(tmp, 'segs');
    exported(src.file, folder);
    runPython(SWAP, [segments(folder)[0] as string]);
    refused(path.join(tmp, 'target.db'), folder);
  });

  test("a snapshot segment's seqs and cursors moved to the next segment's", ({ tmp, makeDb }) => {
    const src = makeSource(makeDb, 'CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);', ['a'], { seed: "INSERT INTO a VALUES (1, 'x');" });
    const folder = path.join(tmp, 'segs');
    exported(src.file, folder);
    src.db.exec("INSERT INTO a VALUES (2, 'y')");
    exported(src.file, folder);
    const [first, second] = segments(folder) as [string, string];
    runPython(META, [first, second]);
    refused(path.join(tmp, 'target.db'), folder);
    // Undamaged, the same export imports whole.
    // Its cursor too: a run that resumes from it would write no segment, and import nothing.
    fs.rmSync(folder, { recursive: true });
    fs.rmSync(`${folder}.cursor`);
    exported(src.file, folder);
    const ok = cli(['import', path.join(tmp, 'good.db'), folder]);
    expect(ok.status, ok.stderr).toBe(0);
  });
});
