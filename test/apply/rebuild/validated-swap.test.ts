// a validated protected rebuild goes on to its swap however many events came in during the validation
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { Syncer, sync, step, type StepContext, type StepOutcome } from '../../../src/apply/sync/index.ts';
import { TARGET_SCHEMA } from '../../../src/apply/target/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * A protected rebuild validates its copy at one seq, in a read transaction
 * (no lock held) between the two target transactions of a step. A steady writer may add more than one catch-up step of
 * events (BUILD_CHUNK) meanwhile. Had the next step caught up one bounded
 * step first, the copy's seq would move past the validated one and call for
 * another validation, and so on for as long as the writer keeps up: a
 * rebuild that never ends, and a live projection that goes stale. Once
 * validated, it goes on: the last catch-up takes every event since.
 */

const ROWS = BUILD_CHUNK + 10;

test.for(['map', 'fts5'] as const)(
  'a protected %s rebuild validated at a seq goes on to its swap (or its fill) when more than a catch-up step of events came in during the validation',
  async (kind, { makeDb, tmp }) => {
    const src = makeSource(makeDb, 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER)', ['t'], {
      seed: `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'row ' || i, i % 7 FROM c`,
    });
    const target = path.join(tmp, 'cache.db');
    const def = (v: string): ProjectionDefinition =>
      kind === 'map'
        ? { name: 'p', source: 't', kind: 'map', columns: { id: 'id', name: 'name', tag: { expr: `'${v}' || n` } } }
        : { name: 'p', source: 't', kind: 'fts5', columns: ['name'], content: 'none', tokenize: v === 'v1' ? 'unicode61' : 'porter' };
    await sync(src.file, target, { projections: [def('v1')] });

    const s = await Syncer.open(src.file, target, { projections: [def('v2')] });
    try {
      const p = s.projections[0];
      if (p === undefined) throw new Error('no projection');
      // The writes land after the validation read the source, before the step's next transaction (StepProgress.validated).
      let validatedAt: number | undefined;
      const ctx: StepContext = {
        db: s.session.db,
        schema: TARGET_SCHEMA,
        sourcePath: src.file,
        batchSize: 100_000,
        progress: {
          begin: () => {},
          snapshotRows: () => {},
          validated: (seq, ok) => {
            expect(ok).toBe(true);
            if (validatedAt !== undefined) return;
            validatedAt = seq;
            // The validation passed; meanwhile more than one catch-up step of events.
            src.db.exec(
              `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${BUILD_CHUNK + 500}) UPDATE t SET n = n + 1 WHERE id IN (SELECT i FROM c)`,
            );
          },
        },
      };
      let next: StepOutcome = await step(ctx, p);
      for (let i = 0; validatedAt === undefined; i++) {
        expect(next.kind).toBe('building');
        expect(i).toBeLessThan(20);
        next = await step(ctx, p);
      }
      // Not a bounded catch-up that would need another validation: the swap, or (fts5) the fill of its shadow.
      expect(next.kind === 'building' ? next.phase : next.kind).toBe(kind === 'map' ? 'initialized' : 'fill');
      for (let i = 0; ; i++) {
        const o = await step(ctx, p);
        if (o.kind === 'initialized') {
          expect(o.swapped).toBe(true);
          break;
        }
        if (o.kind === 'current' || o.kind === 'applied') break;
        expect(o.kind, JSON.stringify(o)).toBe('building');
        expect(i).toBeLessThan(20);
      }
    } finally {
      s.close();
    }
    await sync(src.file, target, { projections: [def('v2')] });
    expect((await verify(src.file, target)).ok).toBe(true);
  },
);
