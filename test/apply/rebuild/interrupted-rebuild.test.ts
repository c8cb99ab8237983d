// an interrupted shadow rebuild resumes or rolls back
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import { cli, jsonOut, makeSource } from '../support/target.ts';
import { syncByLibrary } from '../../cli/support/cli.ts';

/*
 * 003, protected rebuild (test_shadow_rebuild_interruption_resumes_or_rolls_back):
 * a real `sluice sync` subprocess SIGKILLs itself at a step boundary of a
 * protected rebuild (SLUICE_CRASH_AT): right after a step commits
 * (build-step), or just before one does (before-commit). Each time the live
 * projection is the old one, whole, and the half-built shadow is nowhere
 * visible as the projection. Running again resumes the same build; a
 * definition changed in between rolls the old shadow back.
 */

const ROWS = BUILD_CHUNK * 2 + 500;
const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'row' || i, i % 7 FROM c`;
const def = (tag: string) => ({
  name: 'tagged',
  source: 't',
  kind: 'map',
  columns: { id: 'id', name: 'name', tag: { expr: `'${tag}' || n` } },
});

interface Seen {
  readonly tags: Record<string, number>;
  readonly total: number;
  readonly building: boolean;
  readonly shadows: string[];
}

function look(target: string): Seen {
  const db = openDatabase(target, { readonly: true });
  try {
    const rows = db.prepare('SELECT substr(tag, 1, 3) AS t, count(*) AS c FROM tagged GROUP BY 1').all() as { t: string; c: bigint }[];
    return {
      tags: Object.fromEntries(rows.map((r) => [r.t, Number(r.c)])),
      total: rows.reduce((a, r) => a + Number(r.c), 0),
      building: Number(db.prepare("SELECT build IS NOT NULL FROM _sluice_projections WHERE name = 'tagged'").pluck().get()) === 1,
      shadows: db
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE '\\_sluice\\_build\\_%' ESCAPE '\\'")
        .pluck()
        .all() as string[],
    };
  } finally {
    db.close();
  }
}

describe('an interrupted shadow rebuild', () => {
  test('test_shadow_rebuild_interruption_resumes_or_rolls_back: killed after each step, or before a step commits, the old projection stays whole and the next run resumes; a changed definition rolls the shadow back', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['t'], { seed: SEED });
    const target = path.join(tmp, 'cache.db');
    const file = (tag: string) => {
      const f = path.join(tmp, `${tag}.json`);
      fs.writeFileSync(f, JSON.stringify(def(`${tag}:`)));
      return f;
    };
    // The first build through the library (what the CLI runs): the runs killed and resumed are the CLI's.
    expect(await syncByLibrary(src.file, target, [file('v1')])).toBe(0);

    // Killed before its first step commits: nothing of the build is kept.
    const early = cli(['sync', src.file, target, '--projection', file('v2'), '--json'], { SLUICE_CRASH_AT: 'before-commit' });
    expect(early.signal).toBe('SIGKILL');
    expect(look(target)).toEqual({ tags: { 'v1:': ROWS }, total: ROWS, building: false, shadows: [] });

    // Killed after each step: the build goes one step further each run, the live projection untouched.
    let kills = 0;
    for (;;) {
      src.db.exec(`INSERT INTO t VALUES (${ROWS + kills + 1}, 'late', 3); DELETE FROM t WHERE id = ${kills + 1}`);
      const r = cli(['sync', src.file, target, '--projection', file('v2'), '--json'], { SLUICE_CRASH_AT: 'build-step' });
      if (r.signal !== 'SIGKILL') {
        expect(r.status, r.stderr).toBe(0);
        expect(jsonOut<{ projections: { rebuilt?: string; swapped?: boolean }[] }>(r).projections[0]).toMatchObject({
          rebuilt: 'DEFINITION_CHANGED',
          swapped: true,
        });
        break;
      }
      kills++;
      const seen = look(target);
      expect(seen.tags, 'the live projection is the old one, whole').toEqual({ 'v1:': ROWS });
      expect(seen.building).toBe(true);
      expect(seen.shadows).toHaveLength(1);
      expect(kills).toBeLessThan(10);
    }
    expect(kills, 'copy steps and a catch-up step, each killed once').toBeGreaterThanOrEqual(3);
    const done = look(target);
    expect(done).toEqual({ tags: { 'v2:': ROWS }, total: ROWS, building: false, shadows: [] });
    expect((await verify(src.file, target)).ok).toBe(true);

    // A build killed midway, then a run with another definition: the old shadow is rolled back, the new one built.
    const killed = cli(['sync', src.file, target, '--projection', file('v3'), '--json'], { SLUICE_CRASH_AT: 'build-step' });
    expect(killed.signal).toBe('SIGKILL');
    const stale = look(target).shadows;
    expect(stale).toHaveLength(1);
    const other = cli(['sync', src.file, target, '--projection', file('v4'), '--json']);
    expect(other.status, other.stderr).toBe(0);
    // Built and swapped from a shadow of its own (not the one-transaction fallback after a failed validation).
    expect(jsonOut<{ projections: { swapped?: boolean }[] }>(other).projections[0]?.swapped).toBe(true);
    const after = look(target);
    expect(after).toEqual({ tags: { 'v4:': ROWS }, total: ROWS, building: false, shadows: [] });
    expect((await verify(src.file, target)).ok).toBe(true);
  });
});
