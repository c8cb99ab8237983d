// every value case round-trips byte for byte through a segment: int64 extremes, -0.0, REAL, TEXT that is not UTF-8, BLOB, NULL vs '' vs X''
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { exactRows } from './support/exact-rows.ts';
import { exportSnapshotThenEvents, importInMemory, segmentsOf } from './support/segment-files.ts';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { runCliAsync, makeDir, removeDir, syncByLibrary } from '../cli/support/cli.ts';

/*
 * A source written by Python's sqlite3 holds every value case, in a
 * snapshot (the first segment's rows) and in events (the second segment's
 * inserts, updates of one case into another, deletes). The folder imported
 * must equal the synced target and the source, compared by storage class
 * and exact bytes (REAL by its shortest form and sign, so -0.0 is not 0.0).
 */

const CASES = `[
  ("min", -9223372036854775808), ("max", 9223372036854775807), ("negzero", -0.0), ("zero", 0.0),
  ("tenth", 0.1), ("huge", 1e308), ("tiny", 5e-324), ("one-real", 1.0), ("one-int", 1),
  ("text", "plain"), ("empty-text", ""), ("empty-blob", b""), ("blob", b"\\x00\\xff\\x01"), ("null", None),
  ("unicode", "\\u00e9\\U0001F600")
]`;

const SETUP = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, name TEXT, x)")
con.execute("CREATE TABLE w (k TEXT PRIMARY KEY, r REAL, b BLOB, t TEXT, i INTEGER) WITHOUT ROWID")
for i, (name, x) in enumerate(${CASES}):
    con.execute("INSERT INTO v VALUES (?, ?, ?)", (i + 1, name, x))
con.execute("INSERT INTO v VALUES (100, 'bad-utf8', CAST(x'ff41c3' AS TEXT))")
con.execute("INSERT INTO w VALUES (CAST(x'c328' AS TEXT), -0.0, x'', '', -9223372036854775808)")
con.execute("INSERT INTO w VALUES ('', 1.5, NULL, CAST(x'80' AS TEXT), 9223372036854775807)")
con.commit()
`;

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i, (name, x) in enumerate(${CASES}):
    con.execute("INSERT INTO v VALUES (?, ?, ?)", (1000 + i, name, x))
    con.commit()
# (0.0 to -0.0 is no change to capture, which compares as SQLite does: a -0.0 comes as an insert, or a change from another value.)
con.execute("UPDATE v SET x = -0.0 WHERE name = 'tenth' AND id < 1000")
con.execute("UPDATE v SET x = x'' WHERE name = 'empty-text' AND id < 1000")
con.execute("UPDATE v SET x = '' WHERE name = 'null' AND id < 1000")
con.execute("UPDATE v SET x = NULL WHERE name = 'empty-blob' AND id < 1000")
con.execute("UPDATE v SET x = CAST(x'fe' AS TEXT) WHERE id = 100")
con.execute("UPDATE v SET x = 9223372036854775807 WHERE name = 'min' AND id >= 1000")
con.execute("DELETE FROM v WHERE name IN ('tiny', 'text') AND id < 1000")
con.execute("UPDATE w SET k = CAST(x'ff' AS TEXT), r = 0.1 WHERE k = CAST(x'c328' AS TEXT)")
con.execute("INSERT INTO w VALUES (CAST(x'fffe' AS TEXT), -0.0, x'00', CAST(x'c0' AS TEXT), 0)")
con.commit()
`;

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

/** Each row by storage class and exact bytes (exactRows). */
const exact = (file: string) => exactRows(file, { v: undefined, w: undefined });

beforeAll(async () => {
  dir = makeDir();
  src = at('app.db');
  runPython(SETUP, [src]);
  const db = openDatabase(src);
  try {
    enable(db, ['v', 'w']);
  } finally {
    db.close();
  }
  await exportSnapshotThenEvents(src, at('segs'), WRITER);
  expect(await syncByLibrary(src, at('synced.db'))).toBe(0);
});
afterAll(() => removeDir(dir));

describe('segment values', () => {
  test('the imported target equals the synced one and the source, byte for byte', async () => {
    const r = await runCliAsync(['import', at('imported.db'), at('segs')]);
    expect(r.status, r.stderr).toBe(0);
    const want = exact(src);
    expect(exact(at('synced.db'))).toEqual(want);
    expect(exact(at('imported.db'))).toEqual(want);
    const v = want.v as string[];
    // The cases are there: int64 extremes, a REAL -0.0 kept apart from 0.0, malformed UTF-8 TEXT, '' and X'' and NULL.
    expect(v.some((r) => r.endsWith('real:0.0(-)'))).toBe(true);
    expect(v.some((r) => r.endsWith('real:0.0'))).toBe(true);
    expect(v.some((r) => r.endsWith('integer:2D39323233333732303336383534373735383038'))).toBe(true);
    expect(v.some((r) => r.endsWith('text:FE'))).toBe(true);
    expect(v.some((r) => r.endsWith('blob:'))).toBe(true);
    expect(v.some((r) => r.endsWith('text:'))).toBe(true);
    expect(v.some((r) => r.endsWith('null:'))).toBe(true);
    expect((want.w as string[]).some((r) => r.startsWith('text:FF|real:0.1|'))).toBe(true);
  });

  test("read in memory, as a broker's message is, the same segments import to the same bytes", async () => {
    // The snapshot's segment (its rows read from memory too), then the events'.
    expect(segmentsOf(at('segs')).length).toBe(2);
    await importInMemory(at('memory.db'), at('segs'));
    expect(exact(at('memory.db'))).toEqual(exact(src));
  });
});
