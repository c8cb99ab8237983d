// a shadow rebuild of an fts5 index or a custom handler keeps the old result whole until the swap
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource } from '../support/target.ts';
import { counter } from '../support/counter-handler.ts';

/*
 * 003, protected rebuild (test_shadow_rebuild_atomic_swap_preserves_old_result_until_cutover),
 * for the kinds whose rows cannot be read again key by key: an FTS5 index
 * (an entry can only be removed with the values it was made from) and a
 * custom handler that declares its tables. Their shadow is filled from a
 * staged copy of the source rows, validated at one seq, then caught up by
 * applying the journal's events. Between the steps another connection takes
 * the target's write lock at once, a reader sees the old result whole, and
 * after the swap the new one, with every write made during the build.
 */

const ROWS = BUILD_CHUNK * 2 + 500;
const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL, n INTEGER)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'running row' || i, i % 7 FROM c`;

/** Writes to the source during the build: an insert, an update, a delete and a key change, `round` apart. */
function writeDuring(db: Db, round: number): void {
  db.exec(
    `INSERT INTO t VALUES (${ROWS + round}, 'late running', 1); UPDATE t SET body = 'moved running', n = 3 WHERE id = ${round * 1000}; DELETE FROM t WHERE id = ${round * 1000 + 1}; UPDATE t SET id = ${ROWS + 100 + round} WHERE id = ${round * 1000 + 2}`,
  );
}

/** Runs the rebuild of `next` over the target's live projection; at each step between, `onStep` reads and writes. */
async function rebuildWatching(
  source: string,
  target: string,
  next: ProjectionDefinition,
  src: Db,
  onStep: (reader: Db) => void,
): Promise<{ report: Awaited<ReturnType<Syncer['runOnce']>>; steps: number; phases: Set<string> }> {
  const reader = openDatabase(target, { readonly: true });
  const other = openDatabase(target);
  other.pragma('busy_timeout = 0');
  let steps = 0;
  // What the build had done at each step: copying the source, or filling the shadow from the staged copy.
  const phases = new Set<string>();
  const s = await Syncer.open(source, target, {
    projections: [next],
    onProgress: (e) => {
      if (e.phase !== 'snapshot') return;
      const build = reader.prepare('SELECT build FROM _sluice_projections WHERE name = ?').pluck().get(next.name);
      if (typeof build !== 'string') return;
      steps++;
      phases.add((JSON.parse(build) as { fill?: unknown }).fill === undefined ? 'copy' : 'fill');
      onStep(reader);
      // Another writer of the target is not kept waiting: the lock is free between steps.
      other.exec('BEGIN IMMEDIATE; COMMIT');
      // Writes at every step: caught up in the copy, and replayed on the shadow once it is filled.
      writeDuring(src, steps);
    },
  });
  try {
    return { report: await s.runOnce(), steps, phases };
  } finally {
    s.close();
    reader.close();
    other.close();
  }
}

function shadowsIn(db: Db): unknown[] {
  return db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE '\\_sluice\\_build\\_%' ESCAPE '\\'").pluck().all();
}

describe('a shadow rebuild of a replayed kind', () => {
  test.for(['external', 'none'] as const)(
    'test_shadow_rebuild_atomic_swap_preserves_old_result_until_cutover (fts5, content %s): the old index answers whole until the swap, then the new tokenizer, with the writes of the build',
    async (content, { makeDb, tmp }) => {
      const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
      const target = `${tmp}/cache.db`;
      const fts = (tokenize?: string): ProjectionDefinition => ({
        name: 'search',
        source: 't',
        kind: 'fts5',
        columns: ['body'],
        content,
        ...(tokenize === undefined ? {} : { tokenize }),
      });
      await sync(src.file, target, { projections: [fts()] });
      const seen: { running: number; run: number }[] = [];
      const { report, steps, phases } = await rebuildWatching(src.file, target, fts('porter'), src.db, (reader) => {
        // One read: the old index, whole (unicode61 has no stemming: "run" matches nothing).
        seen.push(
          reader
            .prepare(
              "SELECT (SELECT count(*) FROM search WHERE search MATCH 'running') AS running, (SELECT count(*) FROM search WHERE search MATCH 'run') AS run",
            )
            .get() as { running: number; run: number },
        );
      });
      expect(report.projections[0]).toMatchObject({ name: 'search', state: 'active', rebuilt: 'DEFINITION_CHANGED', swapped: true });
      expect(steps, 'the rebuild took several transactions').toBeGreaterThanOrEqual(5);
      // Source writes were made while the shadow was filled: they reach it only by the replay of the journal.
      expect([...phases]).toEqual(['copy', 'fill']);
      for (const r of seen) expect({ running: Number(r.running), run: Number(r.run) }).toEqual({ running: ROWS, run: 0 });
      const reader = openDatabase(target, { readonly: true });
      const count = (q: string) => Number(reader.prepare('SELECT count(*) FROM search WHERE search MATCH ?').pluck().get(q));
      // The porter index: "run" finds every row, and the build's writes are in it (one in, one out, one moved per step).
      expect(count('run')).toBe(ROWS);
      expect(count('moved')).toBe(steps);
      expect(count('late')).toBe(steps);
      const ids = reader
        .prepare("SELECT s._k0 FROM search JOIN search_src s ON s.rowid = search.rowid WHERE search MATCH 'moved'")
        .pluck()
        .all();
      expect(ids.map(Number).sort((a, b) => a - b)).toEqual(Array.from({ length: steps }, (_, i) => (i + 1) * 1000));
      expect(shadowsIn(reader)).toEqual([]);
      reader.close();
      const v = await verify(src.file, target);
      expect(v.ok, JSON.stringify(v.projections)).toBe(true);
    },
  );

  test('test_shadow_rebuild_atomic_swap_preserves_old_result_until_cutover (custom): a handler that declares its tables is built into shadows, its old tables answer whole until the swap, and a view over them keeps working', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
    const target = `${tmp}/cache.db`;
    const def = (version: string): ProjectionDefinition => ({
      name: 'per_n',
      source: 't',
      kind: 'custom',
      tables: ['counts'],
      handler: counter(version),
    });
    await sync(src.file, target, { projections: [def('1')] });
    const user = openDatabase(target);
    user.exec('CREATE VIEW busy AS SELECT n FROM counts WHERE c > 0');
    user.close();
    const seen: { total: number; v2: number }[] = [];
    const { report, steps, phases } = await rebuildWatching(src.file, target, def('2'), src.db, (reader) => {
      seen.push(reader.prepare("SELECT sum(c) AS total, sum(ver = '2') AS v2 FROM counts").get() as { total: number; v2: number });
    });
    expect(report.projections[0]).toMatchObject({ name: 'per_n', state: 'active', rebuilt: 'DEFINITION_CHANGED', swapped: true });
    expect(steps, 'the rebuild took several transactions').toBeGreaterThanOrEqual(5);
    expect([...phases]).toEqual(['copy', 'fill']);
    for (const r of seen) expect({ total: Number(r.total), v2: Number(r.v2) }).toEqual({ total: ROWS, v2: 0 });
    const reader = openDatabase(target, { readonly: true });
    const got = reader.prepare('SELECT n, c, ver FROM counts WHERE c <> 0 ORDER BY n').all();
    const want = src.db.prepare("SELECT n, count(*) AS c, '2' AS ver FROM t GROUP BY n ORDER BY n").all();
    expect(got).toEqual(want);
    expect(reader.prepare('SELECT count(*) FROM busy').pluck().get()).toBe(BigInt(want.length));
    expect(shadowsIn(reader)).toEqual([]);
    reader.close();
    // And it goes on from the swap's cursor.
    src.db.exec("INSERT INTO t VALUES (999999, 'after', 6)");
    await sync(src.file, target, { projections: [def('2')] });
    const after = openDatabase(target, { readonly: true });
    expect(Number(after.prepare('SELECT c FROM counts WHERE n = 6').pluck().get())).toBe(
      Number(src.db.prepare('SELECT count(*) FROM t WHERE n = 6').pluck().get()),
    );
    after.close();
  });
});
