// an update that moves an untyped column a projection reads between 0.0 and -0.0 is written, though its mask cannot say so
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import { compiledFor, stageBatch } from '../../projection/support/batch.ts';
import { FEEDS, throughApplier } from '../../projection/support/applier.ts';

/*
 * Issue 22, item 3. The changed-column mask compares values as the no-op
 * test does, and that says 0.0 and -0.0 are equal (docs/journal.md, Known
 * trade-offs): an update that changes `n` and moves `a` (a column without
 * affinity, the only kind that can hold -0.0) from 0.0 to -0.0 has only
 * `n` in its mask. Its images hold the exact values all the same, so a
 * mirror gets -0.0; a map or an fts5 index (external content) that reads
 * `a` must get it too, or verify finds the row different from its source
 * and suspends the projection (TARGET_EDITED) though nobody edited it.
 * A counter-only update of a row whose `a` is not a zero is still skipped.
 */

const SCHEMA = `CREATE TABLE t (id INTEGER PRIMARY KEY, a, n INTEGER NOT NULL DEFAULT 0);
INSERT INTO t (id, a) VALUES (1, 0.0), (2, -0.0), (3, 'three');`;
const MAP: ProjectionDefinitionInput = { name: 'm', source: 't', kind: 'map', columns: { id: 'id', a: 'a' } };
const FTS: ProjectionDefinitionInput = { name: 'f', source: 't', kind: 'fts5', columns: ['a'], content: 'external' };
const BATCH = [
  'UPDATE t SET a = -0.0, n = n + 1 WHERE id = 1',
  'UPDATE t SET a = 0.0, n = n + 1 WHERE id = 2',
  'UPDATE t SET n = n + 1 WHERE id = 3',
];

/** SQL run before the batch (rolled back with it): TEMP triggers noting each row the batch writes into tgt.`table` (an insert, or an update in place). */
function wrote(table: string, key: string): string {
  const on = (op: string) =>
    `CREATE TEMP TRIGGER written_${op}_${table} AFTER ${op} ON tgt.${table} BEGIN INSERT INTO written VALUES (new.${key}); END;`;
  return `CREATE TEMP TABLE written (id); ${on('INSERT')} ${on('UPDATE')}`;
}

test('a map and an fts5 index that read an untyped column get its -0.0 and 0.0 from an update whose mask names another column', async ({
  tmp,
}) => {
  const { db, lo, hi } = await stageBatch(path.join(tmp, 's.db'), path.join(tmp, 't.db'), {
    schema: SCHEMA,
    tables: ['t'],
    projections: [MAP, FTS],
    before: [],
    batch: BATCH,
  });
  try {
    // The writes as the source has them, and the masks as the journal has them: `n` only.
    expect(Object.is(db.prepare('SELECT a FROM t WHERE id = 1').pluck().get(), -0)).toBe(true);
    expect(Object.is(db.prepare('SELECT a FROM t WHERE id = 2').pluck().get(), 0)).toBe(true);
    const masks = db.prepare('SELECT mask FROM _sluice_journal WHERE seq > ? ORDER BY seq').pluck().all(lo) as bigint[];
    expect(masks).toEqual([4n, 4n, 4n]);
    const cases = [
      { p: compiledFor(db, MAP), table: 'm', key: 'id', values: 'SELECT id, a FROM tgt.m ORDER BY id' },
      { p: compiledFor(db, FTS), table: 'f_src', key: '_k0', values: 'SELECT _k0, a FROM tgt.f_src ORDER BY _k0' },
    ];
    for (const c of cases) {
      expect(c.p.reads, c.table).toEqual(['id', 'a']);
      for (const feed of FEEDS) {
        const r = await throughApplier(db, c.p, lo, hi, wrote(c.table, c.key), feed, () => ({
          written: (db.prepare('SELECT id FROM temp.written ORDER BY id').pluck().all() as bigint[]).map(Number),
          zeros: (db.prepare(c.values).raw().all() as [bigint, unknown][]).map(([id, a]) => [Number(id), Object.is(a, -0) ? '-0.0' : a]),
        }));
        expect(r.outcome, `${c.table}, ${feed}`).toMatchObject({ kind: 'rows', applied: 3 });
        expect(r.seen?.zeros, `${c.table}, ${feed}: the target's values`).toEqual([
          [1, '-0.0'],
          [2, 0],
          [3, 'three'],
        ]);
        // Row 3's update changed only `n`, and its `a` is no zero: checked, not written.
        expect(r.seen?.written, `${c.table}, ${feed}: the rows written`).toEqual([1, 2]);
      }
    }
  } finally {
    db.close();
  }
});
