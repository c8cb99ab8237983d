// a segment read in memory (a broker's small message) imports to the same bytes as the same segment read from its file, in UTF-8 and UTF-16
import path from 'node:path';
import { afterAll } from 'vitest';
import { exactRows } from './support/exact-rows.ts';
import { exportSnapshotThenEvents, importChecked, importInMemory, segmentsOf } from './support/segment-files.ts';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { checkSegment } from '../../src/export/index.ts';
import { makeDir, removeDir } from '../cli/support/cli.ts';

/*
 * One source per text encoding, written by Python's sqlite3: odd values
 * (TEXT of an odd number of bytes in UTF-16, unpaired surrogates, bad
 * UTF-8, int64 extremes, -0.0, '' vs X'' vs NULL) in the snapshot and in
 * events (inserts, updates with masks, deletes), in a rowid table, a WITHOUT
 * ROWID table with a two-column key (a key updated) and a table with an
 * excluded column. Each segment is imported
 * once from its file and once from its bytes; the two targets must hold
 * the same bytes, and the source's.
 */

const SETUP = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA encoding = '" + sys.argv[2] + "'")
con.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, name TEXT, x)")
con.execute("INSERT INTO v VALUES (1, 'a', 'plain')")
con.execute("INSERT INTO v VALUES (60, 'zero', 0.0)")
con.execute("INSERT INTO v VALUES (61, 'negzero', -0.0)")
con.execute("CREATE TABLE k (a TEXT, b INTEGER, note, PRIMARY KEY (b, a)) WITHOUT ROWID")
con.execute("INSERT INTO k VALUES ('x', 1, 'n1')")
con.execute("CREATE TABLE e (id INTEGER PRIMARY KEY, secret TEXT, pub REAL)")
con.execute("INSERT INTO e VALUES (1, 's1', 1.5)")
if sys.argv[2] != 'UTF-8':
    con.execute("INSERT INTO v VALUES (50, 'snap-lone', CAST(x'00dc00dc' AS TEXT))")
con.commit()
`;

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("INSERT INTO v VALUES (2, 'odd', CAST(x'41' AS TEXT))")
con.execute("INSERT INTO v VALUES (3, 'odd3', CAST(x'414243' AS TEXT))")
con.execute("INSERT INTO v VALUES (4, 'lone', CAST(x'00d8' AS TEXT))")
con.execute("INSERT INTO v VALUES (5, 'lone-be', CAST(x'd800' AS TEXT))")
con.execute("INSERT INTO v VALUES (6, 'badutf8', CAST(x'ff41c3' AS TEXT))")
con.execute("INSERT INTO v VALUES (7, 'min', -9223372036854775808)")
con.execute("INSERT INTO v VALUES (8, 'negzero', -0.0)")
con.execute("INSERT INTO v VALUES (9, 'empty', '')")
con.execute("INSERT INTO v VALUES (10, 'emptyblob', x'')")
con.execute("INSERT INTO v VALUES (11, 'fffd', 'a\\ufffdb')")
con.execute("UPDATE v SET x = CAST(x'4243ff' AS TEXT) WHERE id = 1")
con.execute("UPDATE v SET name = CAST(x'ff' AS TEXT) WHERE id = 9")
con.execute("UPDATE v SET name = 'zero-to-neg', x = -0.0 WHERE id = 60")
con.execute("UPDATE v SET name = 'neg-to-zero', x = 0.0 WHERE id = 61")
con.execute("INSERT INTO k VALUES (CAST(x'c328' AS TEXT), -9223372036854775808, -0.0)")
con.execute("UPDATE k SET note = x'00ff', a = 'y' WHERE b = 1")
con.execute("INSERT INTO e VALUES (2, 's2', -0.0)")
con.execute("UPDATE e SET secret = 's1b' WHERE id = 1")
con.execute("UPDATE e SET pub = 2.5, secret = 'x' WHERE id = 2")
con.execute("DELETE FROM e WHERE id = 1")
con.commit()
`;

let dir: string | undefined;
afterAll(() => removeDir(dir));

/** Each row by storage class and exact bytes (exactRows). */
const exact = (file: string) => exactRows(file, { v: ['id', 'name', 'x'], k: ['a', 'b', 'note'], e: ['id', 'pub'] });

describe('a segment in memory imports as its file does', () => {
  for (const encoding of ['UTF-8', 'UTF-16le', 'UTF-16be']) {
    test(`in ${encoding}`, async () => {
      dir ??= makeDir();
      const at = (f: string) => path.join(dir as string, `${encoding}-${f}`);
      const src = at('app.db');
      runPython(SETUP, [src, encoding]);
      const db = openDatabase(src);
      try {
        enable(db, ['v']);
        enable(db, ['k']);
        enable(db, ['e'], { exclude: ['secret'] });
      } finally {
        db.close();
      }
      await exportSnapshotThenEvents(src, at('segs'), WRITER);
      const files = segmentsOf(at('segs'));
      expect(files.length).toBe(2);
      for (const f of files) await importChecked(at('file.db'), checkSegment(f));
      await importInMemory(at('memory.db'), at('segs'));
      const fromFile = exact(at('file.db'));
      expect(exact(at('memory.db'))).toEqual(fromFile);
      expect(fromFile).toEqual(exact(src));
    });
  }
});
