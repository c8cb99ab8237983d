// a bumped source makes the next sync rebuild every projection from a snapshot
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { bump } from '../../../src/capture/index.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { highWater, makeSource, tableCells } from '../support/target.ts';
import { SCHEMA, SEED, scenarioProjections, writeRound } from '../support/scenario.ts';

const NAMES = scenarioProjections().map((p) => p.name);

describe('after a rewrite the triggers could not see', () => {
  test('a capture trigger dropped and re-created identically around a write makes the next pass re-arm the table and rebuild its projections alone, and a bump rebuilds every projection (GENERATION_CHANGED)', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    const s = await Syncer.open(src.file, target, { projections: scenarioProjections() });
    try {
      await s.runOnce();
      writeRound(src.db);
      await s.runOnce();

      // A bulk rewrite with the update trigger dropped and put back unchanged,
      // in one transaction: nothing was journaled, and the trigger SQL is
      // byte-identical. Capture sees that the trigger was made again after
      // it armed the table, so the table's projections stop instead of
      // staying current on paper.
      const trigger = src.db
        .prepare(
          "SELECT name, sql FROM main.sqlite_schema WHERE type = 'trigger' AND tbl_name = 'items' AND name GLOB '_sluice_t*[0-9]_upd'",
        )
        .get() as { name: string; sql: string };
      const hw = highWater(src.db);
      runSqliteCli(
        src.file,
        `BEGIN; DROP TRIGGER "${trigger.name}"; UPDATE items SET name = name || ' (restored)', qty = coalesce(qty, 0) * 10; ${trigger.sql}; COMMIT;`,
      );
      expect(highWater(src.db)).toBe(hw);
      expect(src.db.prepare('SELECT sql FROM main.sqlite_schema WHERE name = ?').pluck().get(trigger.name)).toBe(trigger.sql);

      // Capture sees that the trigger was made again after it armed the
      // table: the next pass re-arms it (sluice's triggers come back first)
      // and rebuilds the table's projections alone; the others go on.
      const ofItems = ['items', 'cheap_items', 'items_fts'];
      const healed = await s.runOnce();
      expect(healed.rearmed?.tables).toMatchObject([{ table: 'items', reason: 'CAPTURE_INTERRUPTED' }]);
      // The tags mirror proves it still matches its source across that DDL and goes
      // on; the custom tag_log cannot be compared, so it rebuilds (SCHEMA_WINDOW).
      expect(new Map(healed.projections.map((p) => [p.name, [p.state, p.rebuilt]]))).toEqual(
        new Map(NAMES.map((n) => [n, ['active', ofItems.includes(n) ? 'CAPTURE_REARMED' : n === 'tag_log' ? 'SCHEMA_WINDOW' : undefined]])),
      );
      expect(tableCells(s.session.db, 'tgt', 'items')).toEqual(tableCells(src.db, 'main', 'items'));
      expect((await verify(src.file, target)).ok).toBe(true);

      const { generation } = bump(src.db, 'bulk rewrite of items with triggers off');
      const rebuilt = await s.runOnce();
      expect(rebuilt.projections.map((p) => [p.name, p.state, p.rebuilt])).toEqual(NAMES.map((n) => [n, 'active', 'GENERATION_CHANGED']));
      expect(rebuilt.projections.find((p) => p.name === 'items')?.snapshotRows).toBe(
        Number(src.db.prepare('SELECT count(*) FROM items').pluck().get() as bigint),
      );
      expect(tableCells(s.session.db, 'tgt', 'items')).toEqual(tableCells(src.db, 'main', 'items'));
      expect(s.session.db.prepare("SELECT count(*) FROM tgt.items_fts WHERE items_fts MATCH 'restored'").pluck().get()).toBe(
        s.session.db.prepare('SELECT count(*) FROM tgt.items_fts_src').pluck().get(),
      );
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
