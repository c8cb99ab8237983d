// an interrupted shadow rebuild of an fts5 index or a custom handler resumes or rolls back
import { SMALL_BUILD_CHUNK } from '../support/small-build-chunk.ts';
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import { cli, jsonOut, makeSource } from '../support/target.ts';
import { syncByLibrary } from '../../cli/support/cli.ts';

/*
 * 003, protected rebuild (test_shadow_rebuild_interruption_resumes_or_rolls_back),
 * for the replayed kinds: an FTS5 index and a custom handler that declares
 * its tables. A real `sluice sync` subprocess SIGKILLs itself right after
 * each step of the build commits (build-step: a chunk copied into the
 * staged copy, a catch-up, a part filled into the shadow, a replay of the
 * journal), or just before the first one commits. Each time the live
 * projection is the old one, whole, and no half-built table is visible as
 * it; the next run resumes, and a definition changed in between rolls the
 * old shadow back.
 */

const ROWS = BUILD_CHUNK * 2 + 500;
const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL, n INTEGER)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'word' || (i % 5) || ' row', i % 7 FROM c`;

/** A handler module (plain JS, as the CLI loads it): counts per n in its declared table, stamped with its version. */
const HANDLER = (version: string) => `
const bump = (ctx, n, by) => ctx.db.insertInto(ctx.tables.counts).values({ n, c: by, ver: '${version}' })
  .onConflict((oc) => oc.column('n').doUpdateSet((eb) => ({ c: eb('c', '+', by) }))).execute();
export default {
  version: '${version}',
  async init(rows, ctx) {
    await ctx.db.schema.createTable(ctx.tables.counts).ifNotExists()
      .addColumn('n', 'integer', (c) => c.primaryKey()).addColumn('c', 'integer').addColumn('ver', 'text').execute();
    const by = new Map();
    for (const r of rows) by.set(Number(r.n), (by.get(Number(r.n)) ?? 0) + 1);
    for (const [n, c] of by) await bump(ctx, n, c);
  },
  async apply(e, ctx) {
    if (e.before !== null) await bump(ctx, Number(e.before.n), -1);
    if (e.after !== null) await bump(ctx, Number(e.after.n), 1);
  },
};
`;

/** The fts5 index's tokenizer at each version: v1 does not stem, the later ones do, each with its own fingerprint. */
const TOKENIZE: Readonly<Record<string, string>> = {
  v1: 'unicode61',
  v2: 'porter unicode61',
  v3: 'porter unicode61 remove_diacritics 0',
  v4: 'porter unicode61 remove_diacritics 2',
};

interface Kind {
  readonly name: string;
  /** Writes the definition of version `v` into `dir`; its file. */
  def(dir: string, v: string): string;
  /** What the live projection shows: its version and its row count, in one read. */
  look(db: import('../../../src/sqlite/index.ts').Db): { version: string; rows: number };
}

const KINDS: readonly Kind[] = [
  {
    name: 'fts5',
    def(dir, v) {
      const f = path.join(dir, `search-${v}.json`);
      const tokenize = TOKENIZE[v] as string;
      fs.writeFileSync(f, JSON.stringify({ name: 'search', source: 't', kind: 'fts5', columns: ['body'], content: 'none', tokenize }));
      return f;
    },
    look(db) {
      // The version whose tokenizer the live FTS5 table was made with (its own DDL, not the stored definition).
      const sql = String(db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'search'").pluck().get());
      const version = Object.keys(TOKENIZE).find((v) => sql.includes(`tokenize='${TOKENIZE[v] as string}'`)) ?? sql;
      const rows = Number(db.prepare("SELECT count(*) FROM search WHERE search MATCH 'row'").pluck().get());
      return { version, rows };
    },
  },
  {
    name: 'custom',
    def(dir, v) {
      fs.writeFileSync(path.join(dir, `handler-${v}.mjs`), HANDLER(v));
      const f = path.join(dir, `counts-${v}.json`);
      fs.writeFileSync(f, JSON.stringify({ name: 'per_n', source: 't', kind: 'custom', tables: ['counts'], module: `./handler-${v}.mjs` }));
      return f;
    },
    look(db) {
      const r = db.prepare('SELECT group_concat(DISTINCT ver) AS ver, sum(c) AS rows FROM counts').get() as { ver: string; rows: bigint };
      return { version: r.ver, rows: Number(r.rows) };
    },
  },
];

function shadows(target: string): string[] {
  const db = openDatabase(target, { readonly: true });
  try {
    return db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE '\\_sluice\\_build\\_%' ESCAPE '\\'")
      .pluck()
      .all() as string[];
  } finally {
    db.close();
  }
}

function seen(kind: Kind, target: string): { version: string; rows: number; building: boolean } {
  const db = openDatabase(target, { readonly: true });
  try {
    const building = Number(db.prepare('SELECT count(*) FROM _sluice_projections WHERE build IS NOT NULL').pluck().get()) === 1;
    return { ...kind.look(db), building };
  } finally {
    db.close();
  }
}

type MakeDb = (name?: string, schema?: string) => { db: import('../../../src/sqlite/index.ts').Db; file: string };

async function interruptedRebuild(kind: Kind, makeDb: MakeDb, tmp: string): Promise<void> {
  expect(BUILD_CHUNK, 'small-build-chunk.ts is imported before src/').toBe(SMALL_BUILD_CHUNK);
  const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
  const target = path.join(tmp, 'cache.db');
  const sync = (v: string, env: Record<string, string> = {}) =>
    cli(['sync', src.file, target, '--projection', kind.def(tmp, v), '--json'], env);
  // The first build through the library (what the CLI runs, with the same small chunks): the runs killed and resumed are the CLI's.
  expect(await syncByLibrary(src.file, target, [kind.def(tmp, 'v1')])).toBe(0);

  // Killed before its first step commits: nothing of the build is kept.
  const early = sync('v2', { SLUICE_CRASH_AT: 'before-commit' });
  expect(early.signal).toBe('SIGKILL');
  expect(seen(kind, target)).toEqual({ version: 'v1', rows: ROWS, building: false });
  expect(shadows(target)).toEqual([]);

  // Killed after each step: one step further each run, the live projection untouched.
  let kills = 0;
  for (;;) {
    // (An insert and a delete: the source keeps ROWS rows, and the build has events to catch up and replay.)
    src.db.exec(`INSERT INTO t VALUES (${ROWS + kills + 1}, 'late row', 3); DELETE FROM t WHERE id = ${kills + 1}`);
    const r = sync('v2', { SLUICE_CRASH_AT: 'build-step' });
    if (r.signal !== 'SIGKILL') {
      expect(r.status, r.stderr).toBe(0);
      expect(jsonOut<{ projections: { rebuilt?: string; swapped?: boolean }[] }>(r).projections[0]).toMatchObject({
        rebuilt: 'DEFINITION_CHANGED',
        swapped: true,
      });
      break;
    }
    kills++;
    expect(seen(kind, target), 'the live projection is the old one, whole').toEqual({ version: 'v1', rows: ROWS, building: true });
    expect(shadows(target).length).toBeGreaterThanOrEqual(1);
    expect(kills).toBeLessThan(20);
  }
  // Three chunks copied, three parts filled, and at least one replay.
  expect(kills).toBeGreaterThanOrEqual(6);
  expect(seen(kind, target)).toEqual({ version: 'v2', rows: ROWS, building: false });
  expect(shadows(target)).toEqual([]);
  expect((await verify(src.file, target)).ok).toBe(true);

  // A build killed midway, then a run with another definition: the old shadow rolled back, the new one built.
  const killed = sync('v3', { SLUICE_CRASH_AT: 'build-step' });
  expect(killed.signal).toBe('SIGKILL');
  const stale = shadows(target);
  expect(stale.length).toBeGreaterThanOrEqual(1);
  const other = sync('v4');
  expect(other.status, other.stderr).toBe(0);
  expect(jsonOut<{ projections: { swapped?: boolean }[] }>(other).projections[0]?.swapped).toBe(true);
  expect(seen(kind, target)).toEqual({ version: 'v4', rows: ROWS, building: false });
  expect(shadows(target)).toEqual([]);
  expect((await verify(src.file, target)).ok).toBe(true);
}

const kindNamed = (name: string): Kind => KINDS.find((k) => k.name === name) as Kind;

describe('an interrupted shadow rebuild of a replayed kind', () => {
  test('test_shadow_rebuild_interruption_resumes_or_rolls_back (fts5): killed after each step, or before one commits, the old projection stays whole and the next run resumes; a changed definition rolls the shadow back', ({
    makeDb,
    tmp,
  }) => interruptedRebuild(kindNamed('fts5'), makeDb, tmp));
  test('test_shadow_rebuild_interruption_resumes_or_rolls_back (custom): killed after each step, or before one commits, the old projection stays whole and the next run resumes; a changed definition rolls the shadow back', ({
    makeDb,
    tmp,
  }) => interruptedRebuild(kindNamed('custom'), makeDb, tmp));
});
