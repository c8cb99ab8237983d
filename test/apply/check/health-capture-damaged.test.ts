// health of a target whose source lost a table of its capture (dropped outside sluice) needs action: CAPTURE_DAMAGED with the source, the table and the repair
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { health } from '../../../src/index.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, syncByLibrary } from '../../cli/support/cli.ts';

/*
 * A schema tool or a hand cleanup dropped one of the source's _sluice_
 * tables. Without _sluice_consumers every sync of the target fails
 * (CAPTURE_DAMAGED, exit 3, and sync --follow stops), yet health read the
 * source's state, tables and journal, found them well, swallowed the error
 * of reading the acknowledgements, and exited 0. Each projection read from
 * such a source now needs action, naming the source, the table and the
 * repair the CLI names when it meets the same damage.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

describe('health of a target whose source lost a capture table', () => {
  test('without _sluice_consumers: sync exits 3 with CAPTURE_DAMAGED, and so does health, saying the same', async () => {
    const src = trackerSource(at('app.db'), ['issues', 'comments']);
    const tgt = at('cache.db');
    expect(await syncByLibrary(src, tgt)).toBe(0);
    expect(health(tgt).ok).toBe(true);
    runSqliteCli(src, 'DROP TABLE _sluice_consumers; UPDATE issues SET title = title || 1 WHERE repo_id = 1 AND number = 1;');

    const s = await runCliAsync(['sync', src, tgt]);
    expect(s.status, s.stderr).toBe(3);
    expect(s.stderr).toContain('CAPTURE_DAMAGED');

    const r = await runCliAsync(['health', tgt, '--json']);
    expect(r.status, r.stdout).toBe(3);
    const h = parseJson(r, S.healthOutput);
    expect(h.ok).toBe(false);
    expect(h.projections.map((p) => p.name).sort()).toEqual(['comments', 'issues']);
    for (const p of h.projections) {
      expect(p.needsAction, p.name).toBe(true);
      expect(p.action).toContain(`CAPTURE_DAMAGED: Source ${src}: sluice's table _sluice_consumers is missing`);
      expect(p.action).toContain(`sluice disable ${src}`);
    }
  });

  test.each(['_sluice_journal', '_sluice_last', '_sluice_tables'])(
    'without %s: every projection of the source needs action',
    async (table) => {
      const src = trackerSource(at('app.db'), ['issues']);
      const tgt = at('cache.db');
      expect(await syncByLibrary(src, tgt)).toBe(0);
      runSqliteCli(src, `DROP TABLE ${table}`);
      const h = health(tgt);
      expect(h.ok).toBe(false);
      expect(h.projections).toHaveLength(1);
      expect(h.projections[0]?.action).toContain(`CAPTURE_DAMAGED: Source ${src}: sluice's table ${table} is missing`);
    },
  );
});
