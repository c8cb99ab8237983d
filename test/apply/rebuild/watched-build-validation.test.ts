// a protected rebuild skips its validation pass only while the watch vouches that no other program wrote its tables
import { SMALL_BUILD_CHUNK } from '../support/small-build-chunk.ts';
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { Syncer, sync, step, type StepContext, type StepOutcome } from '../../../src/apply/sync/index.ts';
import { TARGET_SCHEMA } from '../../../src/apply/target/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BuildVouch, TargetWatch, watchedProjections } from '../../../src/apply/edits/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource, tableCells } from '../support/target.ts';

/*
 * A protected rebuild copies each chunk of the source in the chunk's own
 * transaction and reads again every key the journal touched since, so its
 * copy differs from the source only where another program wrote the copy
 * itself. A syncer that started the build and watched the target's log
 * since, seeing no other program write the build's tables, swaps it in
 * without the validation's pass over every row (build-step.ts, BuildWatch).
 * Here another program (the sqlite3 CLI) forges a row of a chunk already
 * copied: the build must not swap the forged row in. The watch sees the
 * write and the copy is validated (it fails, and the projection is built
 * again in one transaction); a build resumed by another syncer, which did
 * not watch it, is validated whatever happened to it.
 */

// Two whole chunks and a part of one, as with the real size (small-build-chunk.ts): 2,500 rows instead of 40,500.
const ROWS = BUILD_CHUNK * 2 + 500;
const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'row ' || i, i % 7 FROM c`;

interface Kind {
  readonly def: (v: string) => ProjectionDefinition;
  /** SQL that forges row id 1 in the build's copy (the shadow, or a replayed kind's staged copy) named `at`. */
  readonly forge: (at: string) => string;
  /** The copy's table, from the build's shadow name. */
  readonly copy: (shadow: string) => string;
  /** What a reader of the projection sees. */
  readonly result: (db: Db) => unknown;
}

const KINDS: Record<'map' | 'fts5', Kind> = {
  map: {
    def: (v) => ({ name: 'p', source: 't', kind: 'map', columns: { id: 'id', name: 'name', tag: { expr: `'${v}' || n` } } }),
    forge: (at) => `UPDATE "${at}" SET tag = 'forged' WHERE id = 1`,
    copy: (shadow) => shadow,
    result: (db) => tableCells(db, 'main', 'p'),
  },
  fts5: {
    def: (v) => ({
      name: 'p',
      source: 't',
      kind: 'fts5',
      columns: ['name'],
      content: 'none',
      tokenize: v === 'v1' ? 'unicode61' : 'porter',
    }),
    forge: (at) => `UPDATE "${at}" SET name = 'forged' WHERE id = 1`,
    copy: (shadow) => `${shadow}_rows`,
    result: (db) => ['forged', 'row', '1', '7'].map((q) => db.prepare('SELECT count(*) FROM p WHERE p MATCH ?').pluck().get(q)),
  },
};

function buildOf(target: string): { shadow: string; copied: number } | undefined {
  const db = openDatabase(target, { readonly: true });
  try {
    const b = db.prepare("SELECT build FROM _sluice_projections WHERE name = 'p'").pluck().get();
    return typeof b === 'string' ? (JSON.parse(b) as { shadow: string; copied: number }) : undefined;
  } finally {
    db.close();
  }
}

/** What a projection holds after a plain snapshot of `def` into a new target. */
async function fresh(source: string, dir: string, def: ProjectionDefinition): Promise<unknown> {
  const file = path.join(dir, 'fresh.db');
  await sync(source, file, { projections: [def] });
  const db = openDatabase(file, { readonly: true });
  try {
    return KINDS[def.kind as 'map' | 'fts5'].result(db);
  } finally {
    db.close();
  }
}

function resultOf(target: string, k: Kind): unknown {
  const db = openDatabase(target, { readonly: true });
  try {
    return k.result(db);
  } finally {
    db.close();
  }
}

/** Steps a protected rebuild of `def` through step() as a syncer does, with its watch; what each validation found. */
async function stepBuild(source: string, target: string, def: ProjectionDefinition, between: (n: number) => void): Promise<boolean[]> {
  const s = await Syncer.open(source, target, { projections: [def], watchTarget: false });
  const watch = TargetWatch.open(s.session.db, TARGET_SCHEMA, target, (snap) => watchedProjections(['p'])(snap));
  if (watch === undefined) throw new Error('the target has no log to watch');
  const vouch = new BuildVouch(watch);
  const validations: boolean[] = [];
  try {
    const p = s.projections[0];
    if (p === undefined) throw new Error('no projection');
    const ctx: StepContext = {
      db: s.session.db,
      schema: TARGET_SCHEMA,
      sourcePath: source,
      batchSize: 100_000,
      afterLock: (q) => {
        watch.locked();
        vouch.locked(q.name);
        return undefined;
      },
      buildWatch: vouch,
      between: () => watch.between(),
      progress: { begin: () => {}, snapshotRows: () => {}, validated: (_seq, ok) => validations.push(ok) },
    };
    for (let i = 0; ; i++) {
      expect(i).toBeLessThan(30);
      const o: StepOutcome = await step(ctx, p);
      if (o.kind === 'initialized' || o.kind === 'current' || o.kind === 'applied') break;
      expect(o.kind, JSON.stringify(o)).toBe('building');
      watch.between();
      between(i);
    }
  } finally {
    watch.close();
    s.close();
  }
  return validations;
}

describe('a protected rebuild watched by the syncer that started it', () => {
  test.for(['map', 'fts5'] as const)(
    '%s: with no other program writing its tables it is swapped in without a validation pass, and exact',
    async (kind, { makeDb, tmp }) => {
      expect(BUILD_CHUNK, 'small-build-chunk.ts is imported before src/').toBe(SMALL_BUILD_CHUNK);
      const k = KINDS[kind];
      const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
      const target = path.join(tmp, 'cache.db');
      await sync(src.file, target, { projections: [k.def('v1')] });
      // A write to the source during the copy, journaled: caught up.
      const validations = await stepBuild(src.file, target, k.def('v2'), (i) => {
        if (i === 1) src.db.exec("UPDATE t SET name = 'moved ' || id WHERE id IN (2, 3); DELETE FROM t WHERE id = 4");
      });
      expect(validations).toEqual([]);
      expect(resultOf(target, k)).toEqual(await fresh(src.file, tmp, k.def('v2')));
      expect((await verify(src.file, target)).ok).toBe(true);
    },
  );

  test.for(['map', 'fts5'] as const)(
    '%s: a row of a chunk already copied, forged by another program, is seen by the watch: the copy is validated, fails, and the forged row is never swapped in',
    async (kind, { makeDb, tmp }) => {
      const k = KINDS[kind];
      const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
      const target = path.join(tmp, 'cache.db');
      await sync(src.file, target, { projections: [k.def('v1')] });
      let forged = false;
      const validations = await stepBuild(src.file, target, k.def('v2'), () => {
        const b = buildOf(target);
        if (forged || b === undefined || b.copied === 0) return;
        runSqliteCli(target, k.forge(k.copy(b.shadow)));
        forged = true;
      });
      expect(forged).toBe(true);
      expect(validations).toEqual([false]);
      expect(resultOf(target, k)).toEqual(await fresh(src.file, tmp, k.def('v2')));
      expect((await verify(src.file, target)).ok).toBe(true);
    },
  );

  test.for(['map', 'fts5'] as const)(
    '%s: a Syncer run whose copy another program forged between two steps swaps in the source rows, not the forged one',
    async (kind, { makeDb, tmp }) => {
      const k = KINDS[kind];
      const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
      const target = path.join(tmp, 'cache.db');
      await sync(src.file, target, { projections: [k.def('v1')] });
      let forged = false;
      const s = await Syncer.open(src.file, target, {
        projections: [k.def('v2')],
        onProgress: () => {
          const b = buildOf(target);
          if (forged || b === undefined || b.copied === 0) return;
          runSqliteCli(target, k.forge(k.copy(b.shadow)));
          forged = true;
        },
      });
      try {
        await s.runOnce();
      } finally {
        s.close();
      }
      expect(forged).toBe(true);
      expect(buildOf(target)).toBeUndefined();
      expect(resultOf(target, k)).toEqual(await fresh(src.file, tmp, k.def('v2')));
      expect((await verify(src.file, target)).ok).toBe(true);
    },
  );

  test.for(['map', 'fts5'] as const)(
    '%s: a build stopped by one syncer, its copy forged, then resumed by another is validated (it did not watch it) and the forged row is never swapped in',
    async (kind, { makeDb, tmp }) => {
      const k = KINDS[kind];
      const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
      const target = path.join(tmp, 'cache.db');
      await sync(src.file, target, { projections: [k.def('v1')] });
      const stop = new AbortController();
      const first = await Syncer.open(src.file, target, {
        projections: [k.def('v2')],
        onProgress: () => {
          if ((buildOf(target)?.copied ?? 0) > 0) stop.abort();
        },
      });
      try {
        expect((await first.runOnce({ signal: stop.signal })).projections[0]?.stopped).toBe(true);
      } finally {
        first.close();
      }
      const b = buildOf(target);
      if (b === undefined) throw new Error('no build in progress');
      runSqliteCli(target, k.forge(k.copy(b.shadow)));
      const validations = await stepBuild(src.file, target, k.def('v2'), () => {});
      expect(validations).toEqual([false]);
      expect(resultOf(target, k)).toEqual(await fresh(src.file, tmp, k.def('v2')));
      expect((await verify(src.file, target)).ok).toBe(true);
    },
  );
});
