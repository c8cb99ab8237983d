// a column name that sluice alter makes mean another column is never compatible
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { alterWithForecast } from '../../../src/apply/evolution/index.ts';
import { runCliAsync, parseJson, write } from '../../cli/support/cli.ts';
import { NAMES, contents, expectExactOrFailClosed, readersOfA } from '../../cli/support/readers-of-a.ts';

/*
 * A name is not a column. After sluice alter drops `a` and adds a column of
 * that name again, renames `a` away and adds another `a`, or swaps the names
 * of `a` and `b` by three renames, the projections that read `a` (a map's
 * plain column, computed column and filter, and an fts5 index) read another
 * column than the one their rows were made from: explain must not call them
 * Compatible, and sync must rebuild them (a rename is followed only when
 * alter recorded it, and a reused name is a dropped column plus a new one),
 * so that the target ends exact. A rename alter did record (a pure one, of
 * a column they do not read) is followed: Compatible, continued, exact.
 */

interface Scenario {
  readonly name: string;
  readonly ddl: string;
  /** Whether explain may call the readers of `a` Compatible (and sync continue them). */
  readonly compatible: boolean;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'a dropped and added again with a default',
    ddl: "ALTER TABLE t DROP COLUMN a; ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'x'",
    compatible: false,
  },
  {
    name: 'every column but the key dropped and added again as it was (the table and its CREATE TABLE read the same as before)',
    ddl: 'ALTER TABLE t DROP COLUMN a; ALTER TABLE t DROP COLUMN b; ALTER TABLE t DROP COLUMN n; ALTER TABLE t ADD COLUMN a TEXT; ALTER TABLE t ADD COLUMN b TEXT; ALTER TABLE t ADD COLUMN n INTEGER',
    compatible: false,
  },
  {
    name: 'a renamed away and another a added',
    ddl: "ALTER TABLE t RENAME COLUMN a TO a_old; ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'x'",
    compatible: false,
  },
  {
    name: 'a and b swapped by three renames',
    ddl: 'ALTER TABLE t RENAME COLUMN a TO tmp; ALTER TABLE t RENAME b TO a; ALTER TABLE "t" RENAME COLUMN [tmp] TO "b"',
    compatible: false,
  },
  { name: 'a pure rename of a column none of them reads', ddl: 'ALTER TABLE t RENAME COLUMN n TO qty', compatible: true },
];

describe('a column name that sluice alter makes mean another column', () => {
  test.for(SCENARIOS.map((s) => [s.name, s] as const))('%s: explain, sync, health and verify', async ([, s], { tmp }) => {
    const { src, tgt, defs } = await readersOfA(tmp);
    // The alter is the cause (what `sluice alter SRC DDL` runs, through the library); explain, sync, health and verify run the CLI.
    await alterWithForecast(src, s.ddl);
    // A write after the alter: a projection that goes on must apply it.
    write(src, "UPDATE t SET b = 'changed' WHERE id = 3");

    const e = await runCliAsync(['explain', src, tgt, '--projection', defs, '--json']);
    expect([0, 3], e.stderr).toContain(e.status);
    const said = Object.fromEntries(parseJson(e, S.explainOutput).projections.map((p) => [p.name, [p.classification, p.sync.does]]));
    for (const n of NAMES) {
      if (s.compatible) expect(said[n], n).toEqual(['Compatible', 'continue']);
      else {
        expect(said[n]?.[0], n).not.toBe('Compatible');
        expect(said[n]?.[1], n).not.toBe('continue');
      }
    }

    const r = await runCliAsync(['sync', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const report = Object.fromEntries(parseJson(r, S.syncOutput).projections.map((p) => [p.name, p]));
    for (const n of NAMES) {
      expect(report[n]?.state, n).toBe('active');
      if (s.compatible) expect(report[n]?.rebuilt, n).toBeUndefined();
      else expect(report[n]?.rebuilt, n).toBeDefined();
    }
    const c = contents(src, tgt);
    for (const n of NAMES) expect(c[n]?.held, n).toEqual(c[n]?.fromSource);
    expect((await expectExactOrFailClosed(src, tgt)).flagged).toEqual([]);
  });
});
