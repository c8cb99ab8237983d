// a protected rebuild whose new table name was taken during the build refuses the swap by name until it is free
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * A rebuild to a new table name checks that the name is free when it
 * starts; a user may make a table of that name while it builds. The swap
 * then must not fail on a raw SQLite error (on every run, the projection
 * stuck): it refuses with TARGET_TABLE_EXISTS, naming the table and the fix,
 * leaving the live projection and the user's table as they are, and once
 * the table is dropped the next run swaps the build in.
 */

const ROWS = BUILD_CHUNK + 500;
const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL, n INTEGER)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'word row' || i, i % 7 FROM c`;

const KINDS: Record<string, (target: string) => ProjectionDefinition> = {
  fts5: (target) => ({ name: 'p', source: 't', kind: 'fts5', columns: ['body'], content: 'external', target }),
  map: (target) => ({ name: 'p', source: 't', kind: 'map', columns: { id: 'id', body: 'body' }, target }),
};

describe('a protected rebuild to a table name taken during the build', () => {
  test.for(Object.keys(KINDS))(
    '%s: refuses the swap with TARGET_TABLE_EXISTS, then swaps once the table is dropped',
    async (kind, { makeDb, tmp }) => {
      const def = KINDS[kind] as (typeof KINDS)[string];
      const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
      const target = `${tmp}/cache.db`;
      await sync(src.file, target, { projections: [def('old_name')] });
      const user = openDatabase(target);
      let steps = 0;
      const s = await Syncer.open(src.file, target, {
        projections: [def('new_name')],
        onProgress: (e) => {
          if (e.phase === 'snapshot' && ++steps === 1)
            user.exec("CREATE TABLE new_name (mine TEXT); INSERT INTO new_name VALUES ('keep me')");
        },
      });
      try {
        const report = await s.runOnce();
        expect(report.projections[0]?.error?.code).toBe('TARGET_TABLE_EXISTS');
        expect(report.projections[0]?.error?.message).toContain('new_name');
      } finally {
        s.close();
      }
      expect(user.prepare('SELECT mine FROM new_name').pluck().all()).toEqual(['keep me']);
      expect(Number(user.prepare('SELECT count(*) FROM old_name').pluck().get())).toBe(ROWS);
      user.exec('DROP TABLE new_name');
      user.close();
      const again = await sync(src.file, target, { projections: [def('new_name')] });
      expect(again.projections[0]).toMatchObject({ name: 'p', state: 'active', swapped: true });
      const db = openDatabase(target, { readonly: true });
      expect(Number(db.prepare('SELECT count(*) FROM new_name').pluck().get())).toBe(ROWS);
      expect(
        db
          .prepare("SELECT name FROM sqlite_schema WHERE name LIKE 'old\\_name%' ESCAPE '\\' OR name LIKE '\\_sluice\\_build%' ESCAPE '\\'")
          .all(),
      ).toEqual([]);
      db.close();
      expect((await verify(src.file, target)).ok).toBe(true);
    },
  );
});
