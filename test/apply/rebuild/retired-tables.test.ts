// the tables a protected rebuild's swap replaced are retired, then dropped in transactions of their own
import { SMALL_BUILD_CHUNK } from '../support/small-build-chunk.ts';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { protect } from '../../../src/apply/edits/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import { cli, jsonOut, makeSource } from '../support/target.ts';

/*
 * Dropping a table frees every page of it with the target's write lock
 * held, so a protected rebuild's swap no longer drops the tables it
 * replaces: in its one transaction it renames them away
 * (_sluice_retired_<16 hex digits>) and the shadow in, and each retired
 * table is dropped afterwards in a transaction of its own. Readers see the
 * new projection whole from the swap on; the source's writes meanwhile are
 * applied as usual; the user's indexes and sluice protect's guards are on
 * the new tables; and a run killed between the swap and the drops
 * (SLUICE_CRASH_AT=retire) leaves a whole, verified target whose next run
 * drops what was retired.
 */

const ROWS = BUILD_CHUNK * 2 + 500;
const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'word' || (i % 5) || ' row', i % 7 FROM c`;
const map = (tag: string) => ({
  name: 'tagged',
  source: 't',
  kind: 'map' as const,
  columns: { id: 'id', name: 'name', tag: { expr: `'${tag}' || n` } },
});
const TOKENIZE = { v1: 'unicode61', v2: 'porter unicode61' } as const;
const fts = (v: keyof typeof TOKENIZE) => ({
  name: 'search',
  source: 't',
  kind: 'fts5' as const,
  columns: ['name'],
  content: 'none' as const,
  tokenize: TOKENIZE[v],
});

/** Every table whose name starts as a retired one does (an FTS5 index's own tables too). */
function retired(db: Db): string[] {
  return db
    .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE '\\_sluice\\_retired\\_%' ESCAPE '\\' ORDER BY name")
    .pluck()
    .all() as string[];
}

function withTarget<T>(file: string, fn: (db: Db) => T): T {
  const db = openDatabase(file, { readonly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

const tags = (db: Db) =>
  Object.fromEntries(
    (db.prepare('SELECT substr(tag, 1, 3) AS t, count(*) AS c FROM tagged GROUP BY 1').all() as { t: string; c: bigint }[]).map((r) => [
      r.t,
      Number(r.c),
    ]),
  );

describe('the tables a protected rebuild replaced', () => {
  test('are renamed away in the swap and dropped after it, one transaction each: the new projection is whole from the swap on, writes of the source meanwhile are applied, and the user indexes and guards are on the new table', async ({
    makeDb,
    tmp,
  }) => {
    expect(BUILD_CHUNK, 'small-build-chunk.ts is imported before src/').toBe(SMALL_BUILD_CHUNK);
    const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
    const target = path.join(tmp, 'cache.db');
    await sync(src.file, target, { projections: [map('v1:')] });
    const setup = openDatabase(target);
    setup.exec('CREATE INDEX by_name ON tagged (name)');
    setup.close();
    protect(target, true);

    const reader = openDatabase(target, { readonly: true });
    let atSwap: { tags: Record<string, number>; retired: string[]; retiredRows: number; guards: string[] } | undefined;
    const s = await Syncer.open(src.file, target, {
      projections: [map('v2:')],
      onProgress: (e) => {
        if (e.phase !== 'snapshot' || atSwap !== undefined) return;
        if (Number(reader.prepare("SELECT build IS NULL FROM _sluice_projections WHERE name = 'tagged'").pluck().get()) !== 1) return;
        // Just after the swap committed, before any drop: the new rows whole, the old ones under a retired name.
        const names = retired(reader);
        atSwap = {
          tags: tags(reader),
          retired: names,
          // sluice protect's guards, made again in the swap on the new table (none left on the retired one).
          guards: reader.prepare("SELECT tbl_name FROM sqlite_schema WHERE type = 'trigger' ORDER BY 1").pluck().all() as string[],
          retiredRows: names.reduce(
            (a, n) => a + Number(reader.prepare(`SELECT count(*) FROM "${n}" WHERE tag LIKE 'v1:%'`).pluck().get()),
            0,
          ),
        };
        // The source changes between the swap and the drops.
        src.db.exec(`INSERT INTO t VALUES (${ROWS + 1}, 'late', 1); UPDATE t SET n = 6 WHERE id = 2; DELETE FROM t WHERE id = 3`);
      },
    });
    try {
      const r = await s.runOnce();
      expect(r.projections[0]).toMatchObject({ rebuilt: 'DEFINITION_CHANGED', swapped: true });
      expect(atSwap).toEqual({
        tags: { 'v2:': ROWS },
        retired: [expect.stringMatching(/^_sluice_retired_[0-9a-f]{16}$/)],
        retiredRows: ROWS,
        guards: ['tagged', 'tagged', 'tagged'],
      });
      await s.runOnce();
    } finally {
      s.close();
    }
    withTarget(target, (db) => {
      reader.close();
      expect(retired(db)).toEqual([]);
      expect(tags(db)).toEqual({ 'v2:': ROWS });
      expect(db.prepare("SELECT tbl_name FROM sqlite_schema WHERE type = 'index' AND name = 'by_name'").pluck().get()).toBe('tagged');
    });
    // Guarded again: another program's write to the new table fails (sluice protect's trigger, on the new table).
    const edit = spawnSync('sqlite3', [target], { input: "UPDATE tagged SET tag = 'x' WHERE id = 1;", encoding: 'utf8' });
    expect(edit.stderr).toContain('no such function: sluice_protect');
    expect((await verify(src.file, target)).ok).toBe(true);
  });

  test('a run asked to stop at the swap leaves the retired table to its next run, which drops it first', async ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
    const target = path.join(tmp, 'cache.db');
    await sync(src.file, target, { projections: [map('v1:')] });
    const stop = new AbortController();
    const s = await Syncer.open(src.file, target, {
      projections: [map('v2:')],
      // The swap's progress event: the build state is cleared.
      onProgress: (e) => {
        if (
          e.phase === 'snapshot' &&
          withTarget(target, (db) => db.prepare('SELECT build FROM _sluice_projections').pluck().get()) === null
        )
          stop.abort();
      },
    });
    try {
      const r = await s.runOnce({ signal: stop.signal });
      expect(r.projections[0]).toMatchObject({ swapped: true, stopped: true });
      withTarget(target, (db) => {
        expect(tags(db)).toEqual({ 'v2:': ROWS });
        expect(retired(db)).toHaveLength(1);
      });
      await s.runOnce();
      withTarget(target, (db) => expect(retired(db)).toEqual([]));
    } finally {
      s.close();
    }
    expect((await verify(src.file, target)).ok).toBe(true);
  });

  const cases = [
    {
      kind: 'map',
      def: (v: 'v1' | 'v2') => map(`${v}:`),
      look: (db: Db) => ({ version: Object.keys(tags(db)).join(), rows: Number(db.prepare('SELECT count(*) FROM tagged').pluck().get()) }),
      // The old map's table.
      retiredTables: 1,
    },
    {
      kind: 'fts5',
      def: fts,
      look: (db: Db) => {
        const sql = String(db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'search'").pluck().get());
        return {
          version: sql.includes(`'${TOKENIZE.v2}'`) ? 'v2:' : 'v1:',
          rows: Number(db.prepare("SELECT count(*) FROM search WHERE search MATCH 'row'").pluck().get()),
        };
      },
      // The old index, its key table and the build's staged copy of the source rows.
      retiredTables: 3,
    },
  ] as const;
  for (const c of cases) {
    test(`${c.kind}: a run killed between the swap and the drops leaves the new projection whole and verified; the next run drops every retired table`, async ({
      makeDb,
      tmp,
    }) => {
      const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
      const target = path.join(tmp, 'cache.db');
      const file = (v: 'v1' | 'v2') => {
        const f = path.join(tmp, `${c.kind}-${v}.json`);
        fs.writeFileSync(f, JSON.stringify(c.def(v)));
        return f;
      };
      await sync(src.file, target, { projections: [c.def('v1')] });
      const killed = cli(['sync', src.file, target, '--projection', file('v2'), '--json'], { SLUICE_CRASH_AT: 'retire' });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      withTarget(target, (db) => {
        expect(c.look(db)).toEqual({ version: 'v2:', rows: ROWS });
        expect(Number(db.prepare('SELECT count(*) FROM _sluice_projections WHERE build IS NOT NULL').pluck().get())).toBe(0);
        expect(retired(db).filter((n) => /^_sluice_retired_[0-9a-f]{16}$/.test(n))).toHaveLength(c.retiredTables);
      });
      expect((await verify(src.file, target)).ok).toBe(true);

      src.db.exec(`INSERT INTO t VALUES (${ROWS + 1}, 'late row', 1); DELETE FROM t WHERE id = 1`);
      const again = cli(['sync', src.file, target, '--projection', file('v2'), '--json']);
      expect(again.status, again.stderr).toBe(0);
      expect(jsonOut<{ projections: { rebuilt?: string }[] }>(again).projections[0]?.rebuilt).toBeUndefined();
      withTarget(target, (db) => {
        expect(retired(db)).toEqual([]);
        expect(c.look(db)).toEqual({ version: 'v2:', rows: ROWS });
      });
      expect((await verify(src.file, target)).ok).toBe(true);
    });
  }
});
