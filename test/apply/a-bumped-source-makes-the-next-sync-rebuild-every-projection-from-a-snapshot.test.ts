import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { bump } from '../../src/capture/bump.ts';
import { Syncer } from '../../src/apply/sync.ts';
import { verify } from '../../src/apply/verify.ts';
import { highWater, makeSource, tableCells } from './support/target.ts';
import { SCHEMA, SEED, scenarioProjections, writeRound } from './support/scenario.ts';

const NAMES = scenarioProjections().map((p) => p.name);

describe('after a rewrite the triggers could not see', () => {
  test('a bump makes the next sync rebuild every projection from a snapshot (rebuilt: GENERATION_CHANGED), and the target equals the source again', async ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    const s = await Syncer.open(src.file, target, { projections: scenarioProjections() });
    try {
      await s.runOnce();
      writeRound(src.db);
      await s.runOnce();

      // A bulk rewrite with the update trigger dropped and put back unchanged
      // (so capture looks armed): nothing was journaled.
      const trigger = src.db.prepare("SELECT name, sql FROM main.sqlite_schema WHERE type = 'trigger' AND tbl_name = 'items' AND name LIKE '%_upd'").get() as { name: string; sql: string };
      const hw = highWater(src.db);
      runSqliteCli(src.file, `BEGIN; DROP TRIGGER "${trigger.name}"; UPDATE items SET name = name || ' (restored)', qty = coalesce(qty, 0) * 10; ${trigger.sql}; COMMIT;`);
      expect(highWater(src.db)).toBe(hw);

      // Without the bump the target cannot know: it stays current on paper, and verify sees the drift.
      const blind = await s.runOnce();
      expect(blind.projections.map((p) => [p.name, p.state, p.applied, p.rebuilt])).toEqual(NAMES.map((n) => [n, 'active', 0, undefined]));
      const drift = await verify(src.file, target);
      expect(drift.projections.filter((p) => !p.ok).map((p) => p.name).sort()).toEqual(['cheap_items', 'items', 'items_fts']);

      const { generation } = bump(src.db, 'bulk rewrite of items with triggers off');
      const rebuilt = await s.runOnce();
      expect(rebuilt.projections.map((p) => [p.name, p.state, p.rebuilt])).toEqual(NAMES.map((n) => [n, 'active', 'GENERATION_CHANGED']));
      expect(rebuilt.projections.find((p) => p.name === 'items')?.snapshotRows).toBe(Number(src.db.prepare('SELECT count(*) FROM items').pluck().get() as bigint));
      expect(tableCells(s.session.db, 'tgt', 'items')).toEqual(tableCells(src.db, 'main', 'items'));
      expect(s.session.db.prepare("SELECT count(*) FROM tgt.items_fts WHERE items_fts MATCH 'restored'").pluck().get()).toBe(s.session.db.prepare('SELECT count(*) FROM tgt.items_fts_src').pluck().get());
      // The custom projection was initialized again (its handler's init resets its table).
      expect(s.session.db.prepare('SELECT count(*) FROM tgt.applications').pluck().get()).toBe(0n);
      expect((await verify(src.file, target)).ok).toBe(true);
      expect(generation).toBeGreaterThan(1);

      // And it continues incrementally from the new cursor.
      writeRound(src.db, 1);
      const next = await s.runOnce();
      expect(next.projections.map((p) => [p.name, p.state, p.rebuilt])).toEqual(NAMES.map((n) => [n, 'active', undefined]));
      expect(tableCells(s.session.db, 'tgt', 'items')).toEqual(tableCells(src.db, 'main', 'items'));
      expect((await verify(src.file, target)).ok).toBe(true);
    } finally {
      s.close();
    }
  });
});
