// ddl by another program even a django table rebuild leaves a map and an fts5 index exact or fail closed
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runPython } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson } from '../../cli/support/cli.ts';
import { NAMES, contents, expectExactOrFailClosed, readersOf, readersOfA } from '../../cli/support/readers-of-a.ts';

/*
 * DDL that sluice did not make has no recorded rename: whatever another
 * program did to the table (Python's sqlite3 running ALTER TABLE itself, or
 * a table rebuilt the way Django's SQLite schema editor rebuilds one), the
 * next sync leaves the projections that read the table (maps reading `a` by
 * a plain column, a computed column and a filter, and an fts5 index of `a`)
 * exact, or fail-closed: health exits 3 naming each one that is not, with
 * the command that repairs it, and that command makes it exact. Never green
 * and stale.
 */

/** Runs `sql` (statements separated by ;) on `file` with Python's sqlite3, autocommit, in one explicit transaction. */
function python(file: string, sql: string, { foreignKeysOff = false } = {}): void {
  runPython(
    `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
${foreignKeysOff ? "c.execute('PRAGMA foreign_keys = OFF')" : ''}
c.execute('BEGIN')
for s in sys.argv[2].split(';'):
    if s.strip():
        c.execute(s)
c.execute('COMMIT')
${foreignKeysOff ? "assert c.execute('PRAGMA foreign_key_check').fetchall() == []\nc.execute('PRAGMA foreign_keys = ON')" : ''}
c.close()
`,
    [file, sql],
  );
}

/**
 * Django's SQLite schema editor (`_remake_table`) for an AlterField or a
 * RemoveField: with foreign keys off (its __enter__), in the migration's one
 * transaction, create "new__t" with the new shape, copy the rows, drop "t"
 * and rename "new__t" to "t"; then check the foreign keys and turn them on.
 */
function djangoRemake(file: string, create: string, copy: string): void {
  python(file, `${create}; ${copy}; DROP TABLE "t"; ALTER TABLE "new__t" RENAME TO "t"`, { foreignKeysOff: true });
}

interface Scenario {
  readonly name: string;
  readonly change: (src: string) => void;
  /** The source column the projections fit after the change (a repair passes definitions that read it). */
  readonly column?: string;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'a Django AlterField rebuild (a made NOT NULL with a default, rows copied through coalesce), then a write before the next sync',
    change: (src) => {
      djangoRemake(
        src,
        `CREATE TABLE "new__t" ("id" integer NOT NULL PRIMARY KEY, "a" text NOT NULL DEFAULT 'x', "b" text NULL, "n" integer NULL)`,
        `INSERT INTO "new__t" ("id", "a", "b", "n") SELECT "id", coalesce(upper("a"), 'x'), "b", "n" FROM "t"`,
      );
      python(src, `UPDATE t SET a = 'changed' WHERE id = 2`);
    },
  },
  {
    name: 'a Django RemoveField rebuild of a (the definitions no longer fit: fail-closed until definitions that fit are given)',
    change: (src) =>
      djangoRemake(
        src,
        `CREATE TABLE "new__t" ("id" integer NOT NULL PRIMARY KEY, "b" text NULL, "n" integer NULL)`,
        `INSERT INTO "new__t" ("id", "b", "n") SELECT "id", "b", "n" FROM "t"`,
      ),
    column: 'b',
  },
  {
    name: 'a plain ADD COLUMN, then a write',
    change: (src) => python(src, `ALTER TABLE t ADD COLUMN c TEXT DEFAULT 'z'; UPDATE t SET a = 'changed', c = 'c' WHERE id = 1`),
  },
  {
    name: 'a renamed away and another a added',
    change: (src) => python(src, `ALTER TABLE t RENAME COLUMN a TO a_old; ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'x'`),
  },
  {
    name: 'a and b swapped by three renames',
    change: (src) =>
      python(src, 'ALTER TABLE t RENAME COLUMN a TO tmp; ALTER TABLE t RENAME COLUMN b TO a; ALTER TABLE t RENAME COLUMN tmp TO b'),
  },
];

describe('DDL by another program', () => {
  test.for(SCENARIOS.map((s) => [s.name, s] as const))(
    '%s: sync leaves every projection exact or fail-closed, and the repair makes it exact',
    async ([, s], { tmp }) => {
      const { src, tgt } = await readersOfA(tmp);
      s.change(src);
      const e = await runCliAsync(['explain', src, tgt, '--json']);
      expect([0, 3], e.stderr).toContain(e.status);
      for (const p of parseJson(e, S.explainOutput).projections) expect([p.name, p.classification]).not.toEqual([p.name, 'Compatible']);

      const r = await runCliAsync(['sync', src, tgt, '--json']);
      expect([0, 3], r.stderr).toContain(r.status);
      const { flagged, health } = await expectExactOrFailClosed(src, tgt, s.column ?? 'a');
      if (s.column === undefined) {
        expect(flagged).toEqual([]);
        return;
      }
      // Fail-closed: each one that reads the dropped column is named, with a repair that passes definitions that fit.
      expect(flagged.sort()).toEqual([...NAMES].sort());
      for (const p of health.projections) expect(p.action, p.name).toContain(`pass it with --projection to sluice sync ${src} ${tgt}`);
      const fitting = path.join(tmp, 'fitting.json');
      fs.writeFileSync(fitting, JSON.stringify(readersOf(s.column)));
      const repaired = await runCliAsync(['sync', src, tgt, '--projection', fitting, '--json']);
      expect(repaired.status, repaired.stderr).toBe(0);
      expect((await expectExactOrFailClosed(src, tgt, s.column)).flagged).toEqual([]);
      const c = contents(src, tgt, s.column);
      for (const n of NAMES) expect(c[n]?.held, n).toEqual(c[n]?.fromSource);
    },
  );

  test('DROP COLUMN of a captured column by another program is refused by SQLite itself (the capture triggers name it), and nothing goes stale', async ({
    tmp,
  }) => {
    const { src, tgt } = await readersOfA(tmp);
    expect(() => python(src, 'ALTER TABLE t DROP COLUMN a')).toThrow(/error in trigger _sluice_/);
    const r = await runCliAsync(['sync', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect((await expectExactOrFailClosed(src, tgt)).flagged).toEqual([]);
  });
});
