// a step that validates a protected rebuild gives its caller a turn between its two transactions
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { Syncer, sync, step, type StepContext, type StepOutcome } from '../../../src/apply/sync/index.ts';
import { TARGET_SCHEMA } from '../../../src/apply/target/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * A protected rebuild's copy is validated between two target transactions
 * of one step. A Syncer does things between its transactions (the watch of
 * hand edits, the check that the target is still its file); when the
 * validation was an outcome it called back for, it did them before the
 * swap's transaction. The step gives it that turn (StepContext.between):
 * after the validation, before the next transaction, and only there.
 */
test('a step that validates a protected rebuild gives its caller one turn after the validation, before the transaction that goes on', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER)', ['t'], {
    seed: `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${BUILD_CHUNK + 10}) INSERT INTO t SELECT i, 'row ' || i, i % 7 FROM c`,
  });
  const target = path.join(tmp, 'cache.db');
  const def = (v: string) => ({
    name: 'p',
    source: 't',
    kind: 'map' as const,
    columns: { id: 'id', name: 'name', tag: { expr: `'${v}' || n` } },
  });
  await sync(src.file, target, { projections: [def('v1')] });

  const s = await Syncer.open(src.file, target, { projections: [def('v2')] });
  try {
    const p = s.projections[0];
    if (p === undefined) throw new Error('no projection');
    const seen: string[] = [];
    const ctx: StepContext = {
      db: s.session.db,
      schema: TARGET_SCHEMA,
      sourcePath: src.file,
      batchSize: 100_000,
      between: () => seen.push('between'),
      progress: {
        begin: () => seen.push('transaction'),
        snapshotRows: () => {},
        validated: (_seq, ok) => seen.push(`validated ${ok}`),
      },
    };
    const outs: StepOutcome['kind'][] = [];
    for (let i = 0; outs.at(-1) !== 'initialized'; i++) {
      expect(i).toBeLessThan(20);
      outs.push((await step(ctx, p)).kind);
    }
    // Copy and catch-up steps of one transaction each, then one step that validates, has its turn, and swaps.
    expect(outs.slice(0, -1).every((k) => k === 'building')).toBe(true);
    const n = outs.length;
    expect(seen).toEqual([...Array.from({ length: n }, () => 'transaction'), 'validated true', 'between', 'transaction']);
  } finally {
    s.close();
  }
});
