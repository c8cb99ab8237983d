// health and verify say SOURCE_COLUMN_MISSING, with its repair, where the next sync suspends a projection whose SQL reads a gone column
import path from 'node:path';
import { test, expect, describe, runPython } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { health, verify } from '../../../src/apply/check/index.ts';
import { alterWithForecast } from '../../../src/apply/evolution/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import { cli, makeSource, projectionRows } from '../support/target.ts';

/*
 * After a source column that a map reads only through SQL (a computed
 * column, a filter) is dropped by `sluice alter`, or renamed by another
 * program, the next sync suspends the map (SOURCE_COLUMN_MISSING, exit 3)
 * until a definition that fits is given, as `sluice alter --target` and
 * `sluice explain` forecast. health said "the next sluice sync rebuilds it
 * by itself" (exit 0), or, after the rename, that the next sync re-arms the
 * table and rebuilds the map by itself; verify said DEFINITION_CHANGED ("the
 * next sync rebuilds it"). Both compile the stored definition against the
 * source as sync does (compileStoredToday) and say the suspension and its
 * repair.
 */

const SCHEMA =
  "CREATE TABLE t (id INTEGER PRIMARY KEY, title TEXT, body TEXT, n INT); INSERT INTO t VALUES (1, 'apple', 'zebra', 1), (2, 'banana', 'yak', 2);";
const COMPUTED = { name: 'm', source: 't', kind: 'map', columns: { id: 'id', tl: { expr: 'upper(title)' } } };
const FILTERED = { name: 'm', source: 't', kind: 'map', columns: { id: 'id', body: 'body' }, filter: "title <> ''" };

async function built(
  makeDb: (name?: string, schema?: string) => { db: import('../../../src/sqlite/index.ts').Db; file: string },
  tmp: string,
  def: object,
): Promise<{ src: string; tgt: string }> {
  const s = makeSource(makeDb, SCHEMA, ['t']);
  s.db.close();
  const tgt = path.join(tmp, 'cache.db');
  await sync(s.file, tgt, { projections: [def] as ProjectionDefinitionInput[] });
  return { src: s.file, tgt };
}

/** What health and verify say of m now, and then what the next sync does. */
async function expectSuspensionForecast(src: string, tgt: string): Promise<void> {
  const h = health(tgt);
  expect(h.ok).toBe(false);
  const m = h.projections.find((p) => p.name === 'm');
  expect(m).toMatchObject({ state: 'active', needsAction: true, rebuild: null });
  expect(m?.action).toMatch(/^SOURCE_COLUMN_MISSING: /);
  expect(m?.action).toContain('no such column: title');
  expect(m?.action).toContain(`--projection to sluice sync ${src} ${tgt}`);
  expect(m?.problems.join('\n')).not.toMatch(/by itself/);
  const v = await verify(src, tgt, { record: false });
  const vm = v.projections.find((p) => p.name === 'm');
  expect(vm).toMatchObject({ ok: false, reason: 'SOURCE_COLUMN_MISSING' });
  expect(vm?.repair).toContain('--projection');
  // What they said is what the next sync does.
  const r = cli(['sync', src, tgt]);
  expect(r.status, r.stderr).toBe(3);
  expect(projectionRows(tgt).get('m')).toMatchObject({ state: 'suspended', reason: 'SOURCE_COLUMN_MISSING' });
}

describe('health and verify after a column a map reads through SQL is gone', () => {
  test('dropped by sluice alter, read by a computed column: health exits 3 with SOURCE_COLUMN_MISSING and its repair, verify says it too', async ({
    makeDb,
    tmp,
  }) => {
    const { src, tgt } = await built(makeDb, tmp, COMPUTED);
    await alterWithForecast(src, 'ALTER TABLE t DROP COLUMN title');
    const h = cli(['health', tgt]);
    expect(h.status, h.stdout + h.stderr).toBe(3);
    expect(h.stdout).toMatch(/!! m \[map\] active .*\n {3}-> SOURCE_COLUMN_MISSING: /);
    expect(h.stdout).not.toMatch(/rebuilds it by itself/);
    await expectSuspensionForecast(src, tgt);
  });

  test('dropped by sluice alter, read by the filter: the same', async ({ makeDb, tmp }) => {
    const { src, tgt } = await built(makeDb, tmp, FILTERED);
    await alterWithForecast(src, 'ALTER TABLE t DROP COLUMN title');
    await expectSuspensionForecast(src, tgt);
  });

  test('renamed by another program (Python): health no longer promises that the next sync re-arms t and rebuilds m by itself', async ({
    makeDb,
    tmp,
  }) => {
    const { src, tgt } = await built(makeDb, tmp, COMPUTED);
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("ALTER TABLE t RENAME COLUMN title TO heading")
con.commit()`,
      [src],
    );
    const h = health(tgt);
    expect(h.projections.find((p) => p.name === 'm')?.problems.join('\n')).not.toMatch(/re-arms/);
    await expectSuspensionForecast(src, tgt);
  });

  test('a column it does not read dropped, or the column put back: no false alarm, in the same process (what health compiled is not kept past the schema)', async ({
    makeDb,
    tmp,
  }) => {
    const { src, tgt } = await built(makeDb, tmp, COMPUTED);
    expect(health(tgt).ok).toBe(true);
    await alterWithForecast(src, 'ALTER TABLE t DROP COLUMN body');
    expect(health(tgt).ok).toBe(true);
    await alterWithForecast(src, 'ALTER TABLE t DROP COLUMN title');
    expect(health(tgt).projections.find((p) => p.name === 'm')?.action).toMatch(/^SOURCE_COLUMN_MISSING: /);
    await alterWithForecast(src, 'ALTER TABLE t ADD COLUMN title TEXT');
    const back = health(tgt);
    expect(back.ok, JSON.stringify(back.projections)).toBe(true);
    const v = await verify(src, tgt, { record: false });
    expect(v.projections.find((p) => p.name === 'm')?.reason).not.toBe('SOURCE_COLUMN_MISSING');
  });
});
