// a target in another text encoding than its source works exactly or is refused up front
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { runCliAsync, makeDir, removeDir, dumpTables, expectOneLineError, scalar } from '../../cli/support/cli.ts';

/*
 * Text is copied by its bytes, so a target must hold text in its source's
 * encoding (docs/jsonl.md, "Text"). A new target takes the source's
 * encoding and every value arrives exactly, for sync and import alike,
 * including UTF-16 text with an unpaired surrogate (no UTF-8 form); a
 * target already in another encoding is refused up front with
 * TARGET_ENCODING, and nothing is written to it.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);

// UTF-16LE code units as hex, given in the source's byte order: u('D800', '0041') is an unpaired high surrogate, then 'A'.
const PY_UNITS = `
def u(*units):
    le = ENC == 'UTF-16le'
    return "CAST(X'" + ''.join((x[2:] + x[:2]) if le else x for x in units) + "' AS TEXT)"
`;
// Text with no UTF-8 form (unpaired surrogates), text holding U+FFFD, and plain text.
const ROWS = `
con.execute("INSERT INTO t VALUES (1, " + u('D800', '0041') + ", X'00')")
con.execute("INSERT INTO t VALUES (2, 'h\\u00e9llo \\ufffd', NULL)")
con.execute("INSERT INTO t VALUES (3, " + u('0041', 'D83D') + ", 1.5)")
`;
const utf16Source = (file: string, encoding: string) =>
  runPython(
    `import sqlite3, sys
ENC = '${encoding}'
${PY_UNITS}
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA encoding = '${encoding}'")
con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, x)")
${ROWS}
con.commit()`,
    [file],
  );

function capture(file: string): void {
  const db = openDatabase(file);
  try {
    enable(db, ['t']);
  } finally {
    db.close();
  }
}

function writeMore(file: string, encoding: string): void {
  runPython(
    `import sqlite3, sys
ENC = '${encoding}'
${PY_UNITS}
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE t SET s = " + u('DC00') + " WHERE id = 2")
con.execute("INSERT INTO t VALUES (4, " + u('D800', 'D800') + ", 'z')")
con.commit()`,
    [file],
  );
}

const encodingOf = (file: string) => scalar(file, 'PRAGMA encoding');

beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

describe('text encodings', () => {
  for (const encoding of ['UTF-16le', 'UTF-16be']) {
    test(`a ${encoding} source syncs and exports-and-imports into new targets that take its encoding, every value exact, unpaired surrogates included`, async () => {
      const src = at(`${encoding}.db`);
      utf16Source(src, encoding);
      capture(src);
      const out = at(`${encoding}.jsonl`);
      expect((await runCliAsync(['export', src, '--out', out])).status).toBe(0);
      writeMore(src, encoding);
      const exp = await runCliAsync(['export', src, '--out', out]);
      expect(exp.status, exp.stderr).toBe(0);
      // Text with no UTF-8 form travels as a JSON string of UTF-16 code units, never as $t bytes.
      const text = fs.readFileSync(out, 'utf8');
      expect(text).not.toContain('"$t"');
      expect(text).toContain('\\ud800A');

      const synced = at(`${encoding}-synced.db`);
      const s = await runCliAsync(['sync', src, synced]);
      expect(s.status, s.stderr).toBe(0);
      const imported = at(`${encoding}-imported.db`);
      const i = await runCliAsync(['import', imported, out]);
      expect(i.status, i.stderr).toBe(0);
      const source = dumpTables(src, ['t']);
      expect(source.t).toHaveLength(4);
      for (const target of [synced, imported]) {
        expect(encodingOf(target)).toBe(encoding);
        expect(dumpTables(target)).toEqual(source);
      }
    });
  }

  test('sync into a target in another encoding is refused up front with TARGET_ENCODING, not a raw attach error', async () => {
    const src = at('sync-src.db');
    utf16Source(src, 'UTF-16le');
    capture(src);
    const target = at('utf8-target.db');
    runPython(`import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1])\ncon.execute("CREATE TABLE mine (a)")\ncon.commit()`, [target]);
    const before = fs.readFileSync(target);
    const r = await runCliAsync(['sync', src, target]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'TARGET_ENCODING');
    expect(r.stderr).toContain('UTF-16le');
    expect(r.stderr).not.toContain('attached databases');
    expect(fs.readFileSync(target).equals(before)).toBe(true);
  });

  test('import into a target in another encoding is refused up front with TARGET_ENCODING, and nothing is written to it', async () => {
    // A UTF-8 source with TEXT that is not valid UTF-8: a UTF-16 target would reinterpret its bytes (X'FF' became '').
    const src = at('utf8-src.db');
    runPython(
      `import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1])\ncon.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, x)")\ncon.execute("INSERT INTO t VALUES (1, CAST(X'FF' AS TEXT), NULL)")\ncon.commit()`,
      [src],
    );
    capture(src);
    const out = at('utf8.jsonl');
    expect((await runCliAsync(['export', src, '--out', out])).status).toBe(0);
    const target = at('utf16-target.db');
    runPython(
      `import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1])\ncon.execute("PRAGMA encoding = 'UTF-16le'")\ncon.execute("CREATE TABLE mine (a)")\ncon.commit()`,
      [target],
    );
    const before = fs.readFileSync(target);
    const r = await runCliAsync(['import', target, out]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'TARGET_ENCODING');
    expect(r.stderr).toContain('UTF-8');
    expect(fs.readFileSync(target).equals(before)).toBe(true);
    // Into a new target it is exact.
    const fresh = at('utf8-fresh.db');
    expect((await runCliAsync(['import', fresh, out])).status).toBe(0);
    expect(dumpTables(fresh)).toEqual(dumpTables(src, ['t']));
  });
});
