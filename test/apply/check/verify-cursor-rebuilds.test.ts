// verify reports a cursor the next sync rebuilds from by itself, and does not blame a hand edit for it
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { scalar, write } from '../../cli/support/cli.ts';
import { pythonWrite } from '../../cli/support/source-state.ts';
import { takeCopy } from '../../support/restore.ts';

/*
 * A source restored from an older copy (HISTORY_DIVERGED, SEQ_REGRESSED) or
 * a table re-armed after a write its triggers missed (TABLE_REARMED): the
 * cursor does not continue on the source, and the next sync rebuilds the
 * projection from a snapshot by itself. verify compared the rows at the
 * cursor all the same, found them different, blamed a hand edit of the
 * target and suspended it with TARGET_EDITED, which only `sluice reinit`
 * clears. It checks the cursor as sync does, first: not ok, with the
 * cursor's reason, and nothing suspended.
 */

async function setup(tmp: string) {
  const src = path.join(tmp, 'app.db');
  const tgt = path.join(tmp, 'cache.db');
  pythonWrite(
    src,
    'CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7)',
  );
  const db = openDatabase(src);
  enable(db, ['t']);
  db.close();
  await sync(src, tgt);
  return { src, tgt };
}

/** verify says `reason` for t, not ok, suspends nothing; the next sync rebuilds it, and verify is then ok. */
async function expectRebuiltBySync(src: string, tgt: string, reason: string) {
  const r = await verify(src, tgt);
  expect(r.ok).toBe(false);
  const t = r.projections.find((p) => p.name === 't');
  expect(t, JSON.stringify(r)).toMatchObject({ ok: false, reason, diffs: [] });
  expect(t?.suspended).toBeUndefined();
  expect(t?.skipped).toMatch(/the next sluice sync rebuilds it by itself/);
  expect(scalar(tgt, "SELECT state || ' ' || coalesce(reason, '') FROM _sluice_projections WHERE name = 't'")).toBe('active ');
  const s = await sync(src, tgt);
  expect(s.projections.find((p) => p.name === 't')).toMatchObject({ rebuilt: reason });
  expect((await verify(src, tgt)).ok).toBe(true);
}

describe('verify and a cursor that does not continue on the source', () => {
  test('a source restored from an older copy and written past the cursor: HISTORY_DIVERGED', async ({ tmp }) => {
    const { src, tgt } = await setup(tmp);
    const db = openDatabase(src);
    const copy = takeCopy(db, src, tmp);
    db.exec('UPDATE t SET v = v + 100 WHERE id <= 5');
    db.close();
    await sync(src, tgt);
    copy.restore().close();
    pythonWrite(src, 'UPDATE t SET v = v + 1000 WHERE id >= 3');
    await expectRebuiltBySync(src, tgt, 'HISTORY_DIVERGED');
  });

  test('a source restored from an older copy: SEQ_REGRESSED', async ({ tmp }) => {
    const { src, tgt } = await setup(tmp);
    const db = openDatabase(src);
    const copy = takeCopy(db, src, tmp);
    db.exec('UPDATE t SET v = v + 100 WHERE id <= 5');
    db.close();
    await sync(src, tgt);
    copy.restore().close();
    await expectRebuiltBySync(src, tgt, 'SEQ_REGRESSED');
  });

  test('a trigger dropped by another program, a write it missed, the table re-armed: TABLE_REARMED', async ({ tmp }) => {
    const { src, tgt } = await setup(tmp);
    pythonWrite(src, 'DROP TRIGGER _sluice_t1_upd; UPDATE t SET v = 99 WHERE id = 1');
    const db = openDatabase(src);
    enable(db, ['t']);
    db.close();
    await expectRebuiltBySync(src, tgt, 'TABLE_REARMED');
  });

  test('a trigger dropped by another program and a write it missed, not re-armed yet: TABLE_UNARMED, which the next sync re-arms and rebuilds by itself', async ({
    tmp,
  }) => {
    const { src, tgt } = await setup(tmp);
    pythonWrite(src, 'DROP TRIGGER _sluice_t1_upd; UPDATE t SET v = 99 WHERE id = 1');
    const r = await verify(src, tgt);
    const t = r.projections.find((p) => p.name === 't');
    expect(t, JSON.stringify(r)).toMatchObject({ ok: false, reason: 'TABLE_UNARMED', diffs: [] });
    expect(t?.skipped).toMatch(/the next sluice sync re-arms t on the source and rebuilds it by itself/);
    expect(t?.skipped).not.toMatch(/cannot/);
    expect(t?.repair).toBe(
      `TABLE_UNARMED: run sluice sync ${src} ${tgt}: it re-arms t on the source and rebuilds t from a snapshot (CAPTURE_REARMED)`,
    );
    expect(scalar(tgt, "SELECT state || ' ' || coalesce(reason, '') FROM _sluice_projections WHERE name = 't'")).toBe('active ');
    const s = await sync(src, tgt);
    expect(s.projections.find((p) => p.name === 't')).toMatchObject({ rebuilt: 'CAPTURE_REARMED' });
    expect((await verify(src, tgt)).ok).toBe(true);
  });

  test('a table the next sync cannot re-arm (a UNIQUE expression index): TABLE_UNARMED, with the fix status gives', async ({ tmp }) => {
    const { src, tgt } = await setup(tmp);
    pythonWrite(src, 'CREATE UNIQUE INDEX t_neg ON t (-v)');
    const t = (await verify(src, tgt)).projections.find((p) => p.name === 't');
    expect(t).toMatchObject({ ok: false, reason: 'TABLE_UNARMED', diffs: [] });
    expect(t?.skipped).toMatch(/the next sluice sync cannot rebuild it by itself: fix the source first/);
    expect(t?.repair).toBe(
      `TABLE_UNARMED: fix the source: change t as the UNIQUE_EXPRESSION_INDEX refusal says (enable refuses it as it is, and says how), then run sluice enable ${src} t, then run sluice sync again`,
    );
  });

  test('DDL sluice did not make, and rows that differ: SCHEMA_WINDOW (sync rebuilds rather than prove continuity), ok when they match', async ({
    tmp,
  }) => {
    const { src, tgt } = await setup(tmp);
    pythonWrite(src, 'CREATE INDEX t_v ON t (v)');
    expect((await verify(src, tgt)).ok).toBe(true);
    write(tgt, 'UPDATE t SET v = -1 WHERE id = 2');
    await expectRebuiltBySync(src, tgt, 'SCHEMA_WINDOW');
  });
});
