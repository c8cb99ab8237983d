// a shadow rebuild keeps the old result whole until the atomic swap
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * 003, protected rebuild (test_shadow_rebuild_atomic_swap_preserves_old_result_until_cutover):
 * a changed definition of a live projection is built beside it in bounded
 * transactions. Between them another connection takes the target's write
 * lock at once, and a reader sees the old projection whole; after the swap,
 * the new one whole; and writes to the source during the build are in it.
 */

const ROWS = BUILD_CHUNK * 2 + 500;
const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'row' || i, i % 7 FROM c`;
const map = (tag: string) => ({
  name: 'tagged',
  source: 't',
  kind: 'map' as const,
  columns: { id: 'id', name: 'name', tag: { expr: `'${tag}' || n` } },
});

describe('a shadow rebuild', () => {
  test('test_shadow_rebuild_atomic_swap_preserves_old_result_until_cutover: readers see the old rows whole until the swap, the lock is free between steps, and writes during the build are in the result', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
    const target = `${tmp}/cache.db`;
    await sync(src.file, target, { projections: [map('v1:')] });
    const reader = openDatabase(target, { readonly: true });
    const other = openDatabase(target);
    other.pragma('busy_timeout = 0');
    const seen: { v1: number; v2: number; total: number }[] = [];
    let steps = 0;
    let written = 0;
    const s = await Syncer.open(src.file, target, {
      projections: [map('v2:')],
      onProgress: (e) => {
        if (e.phase !== 'snapshot') return;
        // (The last snapshot event is the swap's: after it.)
        const building = Number(reader.prepare("SELECT build IS NOT NULL FROM _sluice_projections WHERE name = 'tagged'").pluck().get());
        if (building !== 1) return;
        steps++;
        // A reader on another connection: one projection, whole, in one read.
        seen.push(
          reader.prepare("SELECT sum(tag LIKE 'v1:%') AS v1, sum(tag LIKE 'v2:%') AS v2, count(*) AS total FROM tagged").get() as {
            v1: number;
            v2: number;
            total: number;
          },
        );
        // Another writer of the target is not kept waiting: the lock is free between steps.
        other.exec('BEGIN IMMEDIATE; COMMIT');
        // And the source changes while the shadow is built: an insert, an update, a delete, a key change.
        if (written < 3) {
          written++;
          src.db.exec(
            `INSERT INTO t VALUES (${ROWS + written}, 'late', 1); UPDATE t SET name = 'moved' WHERE id = ${written * 1000}; DELETE FROM t WHERE id = ${written * 1000 + 1}; UPDATE t SET id = ${ROWS + 100 + written} WHERE id = ${written * 1000 + 2}`,
          );
        }
      },
    });
    const report = await s.runOnce();
    s.close();
    // Swapped in from the shadow (not the fallback of one transaction, taken when the shadow fails its validation).
    expect(report.projections[0]).toMatchObject({ name: 'tagged', state: 'active', rebuilt: 'DEFINITION_CHANGED', swapped: true });
    expect(steps, 'the rebuild took several transactions').toBeGreaterThanOrEqual(3);
    for (const raw of seen) {
      const r = { v1: Number(raw.v1), v2: Number(raw.v2), total: Number(raw.total) };
      expect(r.v2, 'no row of the new definition is visible before the swap').toBe(0);
      expect(r.v1).toBe(r.total);
      expect(r.total).toBe(ROWS);
    }
    const after = reader.prepare("SELECT sum(tag LIKE 'v2:%') AS v2, count(*) AS total FROM tagged").get() as { v2: number; total: number };
    expect(Number(after.v2)).toBe(Number(after.total));
    // Three rows inserted, three deleted, three moved to another key.
    expect(Number(after.total)).toBe(ROWS);
    // No shadow left behind, and the result is exactly the source's.
    expect(reader.prepare("SELECT name FROM sqlite_schema WHERE name LIKE '\\_sluice\\_build\\_%' ESCAPE '\\'").all()).toEqual([]);
    reader.close();
    other.close();
    const v = await verify(src.file, target);
    expect(v.ok, JSON.stringify(v.projections)).toBe(true);
  });
});
