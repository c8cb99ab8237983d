// sluice alter refused on a source whose captured table another program altered names the tables in its enable fix, and that command runs
import path from 'node:path';
import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { cli, makeSource } from '../apply/support/target.ts';

/*
 * When another program changed a captured table's schema, the table is not
 * armed, and sluice alter refuses to run (it cannot tell the table's readers
 * what changed). Its fix said "run sluice enable SRC", naming no table: that
 * command is itself a usage error (exit 2). The fix names the unarmed tables,
 * as status and health name them (rearmFix, enableCommand), and running it
 * lets the alter through. Health's fix for a source whose capture was
 * removed ("run sluice enable on it") names the table too.
 */

const SCHEMA =
  "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT); CREATE TABLE u (id INTEGER PRIMARY KEY, w TEXT); INSERT INTO t VALUES (1, 'a'); INSERT INTO u VALUES (1, 'w');";

/** The first `run sluice enable ...` command a message names, as typed (the words after `run sluice `, up to the next `(` or `,`). */
function enableFix(message: string): string[] {
  const m = /run sluice (enable [^(,;]*?)\s*(?:\(|,|;|$)/.exec(message);
  expect(m, message).not.toBeNull();
  return (m?.[1] ?? '').split(' ');
}

function pythonAlter(file: string, sql: string): void {
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript(sys.argv[2])
con.commit()`,
    [file, sql],
  );
}

describe('sluice alter on a source with a table another program altered', () => {
  test('the refusal names the unarmed table in its enable fix, which runs, and the alter then goes through', ({ makeDb }) => {
    const src = makeSource(makeDb, SCHEMA, ['t', 'u']);
    src.db.close();
    pythonAlter(src.file, 'ALTER TABLE t ADD COLUMN py TEXT');
    const refused = cli(['alter', src.file, 'ALTER TABLE t ADD COLUMN c TEXT']);
    expect(refused.status, refused.stderr).toBe(1);
    expect(refused.stderr).toContain('ALTER_REFUSED');
    const fix = enableFix(refused.stderr);
    expect(fix).toEqual(['enable', src.file, 't']);
    const enabled = cli(fix);
    expect(enabled.status, enabled.stderr).toBe(0);
    const again = cli(['alter', src.file, 'ALTER TABLE t ADD COLUMN c TEXT']);
    expect(again.status, again.stderr).toBe(0);
  });

  test('two tables altered by another program: the fix names both', ({ makeDb }) => {
    const src = makeSource(makeDb, SCHEMA, ['t', 'u']);
    src.db.close();
    runSqliteCli(src.file, 'ALTER TABLE t ADD COLUMN py TEXT; ALTER TABLE u ADD COLUMN py TEXT;');
    const refused = cli(['alter', src.file, 'ALTER TABLE t ADD COLUMN c TEXT']);
    expect(refused.status, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(/tables t \(SCHEMA_CHANGED: .*\) and u \(SCHEMA_CHANGED: .*\) are not armed/);
    const fix = enableFix(refused.stderr);
    expect(fix).toEqual(['enable', src.file, 't', 'u']);
    expect(cli(fix).status).toBe(0);
    expect(cli(['alter', src.file, 'ALTER TABLE t ADD COLUMN c TEXT']).status).toBe(0);
  });
});

describe('health of a target whose source no longer has capture', () => {
  test('its fix names the enable command with the table, which runs', ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['t']);
    src.db.close();
    const tgt = path.join(tmp, 'cache.db');
    expect(cli(['sync', src.file, tgt]).status).toBe(0);
    expect(cli(['disable', src.file]).status).toBe(0);
    const h = cli(['health', tgt]);
    expect(h.status).toBe(3);
    const fix = enableFix(h.stdout);
    expect(fix).toEqual(['enable', src.file, 't']);
    expect(cli(fix).status).toBe(0);
  });
});
