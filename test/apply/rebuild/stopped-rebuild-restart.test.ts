// a protected rebuild stopped midway starts again when its source cannot be continued from where it stopped
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { bump } from '../../../src/capture/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource, tableCells } from '../support/target.ts';
import { counter } from '../support/counter-handler.ts';

/*
 * A build resumed on a later run goes on from what it copied, caught up and
 * replayed from the journal. That holds only while the journal is the
 * source's whole history since: after a rewrite the triggers could not see
 * (then `sluice bump`), the events of the rewrite are not in it, and a
 * build past its validation (filling or replaying a replayed kind's shadow)
 * would swap in rows the source no longer has, with a cursor that looks
 * current. Like a cursor, such a build cannot be continued: it starts again
 * from the source as it is.
 */

const ROWS = BUILD_CHUNK * 2 + 500;
const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL, n INTEGER)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'word row' || i, i % 7 FROM c`;

const KINDS: Record<string, { def: (v: string) => ProjectionDefinition; result: (db: Db) => unknown }> = {
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
      keys: tableCells(db, 'main', 'p_src', ['_k0']),
      match: ['word', 'rewritten', 'run'].map((q) => db.prepare('SELECT count(*) FROM p WHERE p MATCH ?').pluck().get(q)),
    }),
  },
  custom: {
    def: (v) => ({ name: 'p', source: 't', kind: 'custom', tables: ['counts'], handler: counter(v) }),
    result: (db) => db.prepare('SELECT n, c, ver FROM counts WHERE c <> 0 ORDER BY n').all(),
  },
};

/** Runs the rebuild to `def` until its shadow is being filled (the copy validated), and stops there. */
async function buildUntilFilling(source: string, target: string, def: ProjectionDefinition): Promise<void> {
  const reader = openDatabase(target, { readonly: true });
  const stop = new AbortController();
  const s = await Syncer.open(source, target, {
    projections: [def],
    onProgress: (e) => {
      if (e.phase !== 'snapshot') return;
      const build = reader.prepare("SELECT build FROM _sluice_projections WHERE name = 'p'").pluck().get();
      if (typeof build === 'string' && (JSON.parse(build) as { fill?: unknown }).fill !== undefined) stop.abort();
    },
  });
  try {
    const r = await s.runOnce({ signal: stop.signal });
    expect(r.projections[0]?.stopped).toBe(true);
  } finally {
    s.close();
    reader.close();
  }
}

describe('a protected rebuild stopped while its shadow is filled', () => {
  test.for(Object.keys(KINDS))(
    '%s: after a rewrite the triggers could not see and a bump, the next run builds it again from the source and swaps in its rows',
    async (kind, { makeDb, tmp }) => {
      const k = KINDS[kind] as (typeof KINDS)[string];
      const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
      const target = `${tmp}/cache.db`;
      await sync(src.file, target, { projections: [k.def('1')] });
      await buildUntilFilling(src.file, target, k.def('2'));
      // A rewrite with the capture triggers off (not journaled), then the documented repair: a bump.
      const triggers = src.db
        .prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'trigger' AND tbl_name = 't'")
        .pluck()
        .all() as string[];
      const names = src.db
        .prepare("SELECT name FROM main.sqlite_schema WHERE type = 'trigger' AND tbl_name = 't'")
        .pluck()
        .all() as string[];
      runSqliteCli(
        src.file,
        `BEGIN; ${names.map((n) => `DROP TRIGGER "${n}";`).join(' ')} UPDATE t SET body = 'rewritten', n = 0 WHERE id % 3 = 0; DELETE FROM t WHERE id % 5 = 0; ${triggers.join('; ')}; COMMIT;`,
      );
      bump(src.db, 'rewrite of t with its triggers off');
      const report = await sync(src.file, target, { projections: [k.def('2')] });
      expect(report.projections[0]).toMatchObject({ name: 'p', state: 'active', swapped: true });
      const fresh = `${tmp}/fresh.db`;
      await sync(src.file, fresh, { projections: [k.def('2')] });
      const a = openDatabase(target, { readonly: true });
      const b = openDatabase(fresh, { readonly: true });
      expect(k.result(a)).toEqual(k.result(b));
      expect(a.prepare("SELECT name FROM sqlite_schema WHERE name LIKE '\\_sluice\\_build\\_%' ESCAPE '\\'").all()).toEqual([]);
      a.close();
      b.close();
      const v = await verify(src.file, target);
      expect(v.ok, JSON.stringify(v.projections)).toBe(true);
    },
  );
});
