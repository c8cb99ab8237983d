// verify, and sync's proof across unrelated source DDL, work on a table as wide as capture takes
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython, runSqliteCli } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, onDatabase, scalar } from '../../cli/support/cli.ts';

/*
 * Verify proves a mirror equal to its source in SQL, one test per column
 * (class and bytes). Joined as one left-deep AND chain, that is deeper than
 * SQLite's expression limit (1000) on a table of a few hundred columns: verify
 * failed with a raw "Expression tree is too large", and so did every sync
 * after unrelated DDL in the source (CREATE INDEX on another table opens a
 * schema window, which sync closes with the same proof), leaving the mirror
 * stale for good. The table here is as wide as capture takes (its journal
 * holds both images: 2 x 997 columns and 5 of its own, SQLite's limit being
 * 2000), with columns of every affinity and a NOCASE one, holding text,
 * integers, reals (-0.0 too), blobs and NULLs.
 */

const WIDEST = 997;
const TYPES = ['', 'TEXT', 'INTEGER', 'REAL', 'NUMERIC', 'TEXT COLLATE NOCASE'];
const ROWS = 200;

/** A source with `width` columns (id and c1..), ROWS rows of every kind of value, and a table `other`. */
function wideSource(file: string, width: number): void {
  runPython(
    `import sqlite3, sys
n, rows = ${width}, ${ROWS}
types = ${JSON.stringify(TYPES)}
con = sqlite3.connect(sys.argv[1])
cols = ', '.join('c%d %s' % (i, types[i % len(types)]) for i in range(1, n))
con.execute('CREATE TABLE t (id INTEGER PRIMARY KEY, %s)' % cols)
con.execute('CREATE TABLE other (x)')
def value(r, i):
    k = (r + i) % 6
    return ['s%d_%d' % (r, i), r * i, i / 3.0, None, bytes([r % 256, i % 256]), -0.0 if i % 2 else 0.0][k]
con.executemany('INSERT INTO t VALUES (%s)' % ', '.join('?' * n), [[r] + [value(r, i) for i in range(1, n)] for r in range(1, rows + 1)])
con.commit()`,
    [file],
  );
}

/** Writes of another program: python's sqlite3. */
function pythonWrites(file: string, sql: string): void {
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript(sys.argv[2])
con.commit()`,
    [file, sql],
  );
}

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = at('wide.db');
  tgt = at('cache.db');
  wideSource(src, WIDEST);
  onDatabase(src, (db) => enable(db, ['t']));
  await sync(src, tgt);
}, 120_000);
afterAll(() => removeDir(dir));

describe(`a mirror of a ${WIDEST}-column table`, () => {
  test('verifies (plain and --json), and after a CREATE INDEX on another source table sync still applies its updates', async () => {
    pythonWrites(
      src,
      `UPDATE t SET c${WIDEST - 1} = 'z', c7 = NULL WHERE id < 50; DELETE FROM t WHERE id = 60; INSERT INTO t (id, c1) VALUES (1000, 'new')`,
    );
    const s1 = await runCliAsync(['sync', src, tgt]);
    expect(s1.status, s1.stderr).toBe(0);

    const human = await runCliAsync(['verify', src, tgt]);
    expect(human.stderr).not.toMatch(/SQLITE_|Expression tree/);
    expect(human.status, human.stderr).toBe(0);
    const json = await runCliAsync(['verify', src, tgt, '--json']);
    expect(json.status, json.stderr).toBe(0);
    expect(parseJson(json, S.verifyOutput).projections).toMatchObject([{ name: 't', ok: true, checked: ROWS }]);

    // Unrelated DDL, then a write: the schema window sync proves closed by comparing the mirror with the source.
    runSqliteCli(src, "CREATE INDEX ox ON other (x); UPDATE t SET c5 = 'y' WHERE id = 1;");
    const s2 = await runCliAsync(['sync', src, tgt]);
    expect(s2.stderr).not.toMatch(/SQLITE_|Expression tree/);
    expect(s2.status, s2.stderr).toBe(0);
    expect(scalar(tgt, 'SELECT c5 FROM t WHERE id = 1')).toBe('y');
    const again = await runCliAsync(['verify', src, tgt, '--json']);
    expect(again.status, again.stderr).toBe(0);
  });

  test('behind its source, verifies at its cursor: the keys changed since are compared as they were then', async () => {
    pythonWrites(
      src,
      `UPDATE t SET c9 = 'behind', c${WIDEST - 2} = x'ff' WHERE id < 20; DELETE FROM t WHERE id = 70; INSERT INTO t (id, c3) VALUES (2000, 3)`,
    );
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.stderr).not.toMatch(/SQLITE_|aggregate terms/);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.verifyOutput).projections).toMatchObject([{ name: 't', ok: true, inFlight: 21 }]);
    const s = await runCliAsync(['sync', src, tgt]);
    expect(s.status, s.stderr).toBe(0);
  });

  test('a target row edited by hand is named by its key, not met with a raw SQLite error', async () => {
    runSqliteCli(tgt, `UPDATE t SET c${WIDEST - 1} = 'tampered' WHERE id = 5;`);
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.stderr).not.toMatch(/SQLITE_|too many arguments/);
    expect(r.status, r.stderr).toBe(3);
    expect(parseJson(r, S.verifyOutput).projections).toMatchObject([{ name: 't', ok: false, diffs: [{ key: [5], kind: 'different' }] }]);
  });
});
