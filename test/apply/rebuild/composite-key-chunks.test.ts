// a protected rebuild of a table with a composite key copies each chunk after the last one
import { SMALL_BUILD_CHUNK } from '../support/small-build-chunk.ts';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource, tableCells } from '../support/target.ts';
import { counter } from '../support/counter-handler.ts';

/*
 * A protected rebuild copies its source (and fills a replayed kind's shadow
 * from its staged copy) in chunks in key order, each after the last key of
 * the one before. With a key of several columns, that last key is the
 * greatest in every column's order, not the first column's least with the
 * last column's greatest: else the next chunk copies rows again (a raw
 * PRIMARY KEY error on every run, the projection never rebuilt). Writes made
 * during the build (updates, key changes, deletes, re-inserts) are in the
 * result, which is what a fresh sync into a new target makes.
 */

const ROWS = BUILD_CHUNK * 2 + 500;
const SCHEMA = 'CREATE TABLE t (a INTEGER NOT NULL, b TEXT NOT NULL, body TEXT NOT NULL, n INTEGER, PRIMARY KEY (a, b)) WITHOUT ROWID';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i / 3, 'b' || (i % 3), 'word row' || i, i % 7 FROM c`;

function writeDuring(db: Db, step: number): void {
  db.exec(`BEGIN; UPDATE t SET body = 'step${step} moved', n = (n + 1) % 7 WHERE a % 50 = ${step};
    UPDATE t SET a = a + 100000 WHERE a % 97 = ${step};
    DELETE FROM t WHERE a % 89 = ${step};
    INSERT OR REPLACE INTO t VALUES (${step}, 'b0', 'reinserted${step}', 3);
    COMMIT`);
}

/** Each kind: its definition at version 1 and 2 (a rebuild), and what its result is, to compare with a fresh sync's. */
const KINDS: Record<string, { def: (v: string) => ProjectionDefinition; result: (db: Db) => unknown }> = {
  map: {
    def: (v) => ({ name: 'p', source: 't', kind: 'map', columns: { a: 'a', b: 'b', body: 'body', ...(v === '1' ? {} : { n: 'n' }) } }),
    result: (db) => tableCells(db, 'main', 'p'),
  },
  fts5: {
    def: (v) => ({
      name: 'p',
      source: 't',
      kind: 'fts5',
      columns: ['body'],
      content: 'external',
      ...(v === '1' ? {} : { tokenize: 'porter' }),
    }),
    result: (db) => ({
      keys: tableCells(db, 'main', 'p_src', ['_k0', '_k1']),
      match: ['word', 'moved', 'reinserted1', 'step2', 'run'].map((q) =>
        db.prepare('SELECT count(*) FROM p WHERE p MATCH ?').pluck().get(q),
      ),
    }),
  },
  custom: {
    def: (v) => ({ name: 'p', source: 't', kind: 'custom', tables: ['counts'], handler: counter(v) }),
    result: (db) => db.prepare('SELECT n, c, ver FROM counts WHERE c <> 0 ORDER BY n').all(),
  },
};

describe('a protected rebuild over a composite key', () => {
  test.for(Object.keys(KINDS))(
    '%s: every chunk starts after the last one, and the result is a fresh sync',
    async (kind, { makeDb, tmp }) => {
      expect(BUILD_CHUNK, 'small-build-chunk.ts is imported before src/').toBe(SMALL_BUILD_CHUNK);
      const k = KINDS[kind] as (typeof KINDS)[string];
      const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
      const target = `${tmp}/cache.db`;
      await sync(src.file, target, { projections: [k.def('1')] });
      const reader = openDatabase(target, { readonly: true });
      let steps = 0;
      const s = await Syncer.open(src.file, target, {
        projections: [k.def('2')],
        onProgress: (e) => {
          if (e.phase !== 'snapshot') return;
          if (typeof reader.prepare("SELECT build FROM _sluice_projections WHERE name = 'p'").pluck().get() !== 'string') return;
          writeDuring(src.db, ++steps);
        },
      });
      try {
        const report = await s.runOnce();
        expect(report.projections[0]).toMatchObject({ name: 'p', state: 'active', rebuilt: 'DEFINITION_CHANGED', swapped: true });
      } finally {
        s.close();
      }
      expect(steps, 'the rebuild took several transactions').toBeGreaterThanOrEqual(3);
      expect(reader.prepare("SELECT name FROM sqlite_schema WHERE name LIKE '\\_sluice\\_build\\_%' ESCAPE '\\'").all()).toEqual([]);
      const fresh = `${tmp}/fresh.db`;
      await sync(src.file, fresh, { projections: [k.def('2')] });
      const f = openDatabase(fresh, { readonly: true });
      expect(k.result(reader)).toEqual(k.result(f));
      f.close();
      reader.close();
      const v = await verify(src.file, target);
      expect(v.ok, JSON.stringify(v.projections)).toBe(true);
    },
  );
});
