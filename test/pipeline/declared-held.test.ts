import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { convergeOnce, loadPipeline, pipelineHealth, dropUndeclared, heldProjections } from '../../src/pipeline/index.ts';

/*
 * What a pipeline file declares of what a target holds is one rule
 * (declared.ts, declaresHeld), read alike by health --config, one
 * converging pass's prune and run's prune: under "*", the mirrors "*" made
 * are declared, and a mirror that a definition made and the file no longer
 * names is not, though it is a mirror too.
 */

describe('a projection the target holds', () => {
  test('an explicit mirror taken out of a file that keeps "*" is undeclared to health and dropped by both prunes, and "*" then mirrors the table', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file: src } = makeDb(
      'app.db',
      `CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT);
       INSERT INTO issues VALUES (1, 'a'), (2, 'b');`,
    );
    enable(db, ['issues']);
    const config = path.join(tmp, 'sluice.yml');
    const write = (prune: boolean) =>
      fs.writeFileSync(
        config,
        `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - path: TARGET\n        projections: ["*"]\n${prune ? 'prune: true\n' : ''}`,
      );
    const build = async (name: string): Promise<string> => {
      const tgt = path.join(tmp, name);
      await sync(src, tgt, { projections: ['*', { name: 'issues_copy', source: 'issues', kind: 'mirror' }] });
      // "*" leaves out a table a definition mirrors already.
      expect(heldProjections(tgt).map((r) => r.name)).toEqual(['issues_copy']);
      return tgt;
    };
    const load = async (prune: boolean, target: string) => {
      write(prune);
      fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace('TARGET', path.basename(target)));
      return loadPipeline(config);
    };

    // health --config: the explicit mirror is undeclared.
    const a = await build('a.db');
    const h = pipelineHealth(await load(false, a));
    const seen = Object.fromEntries(h.targets[0]?.projections.map((p) => [p.name, p.declared]) ?? []);
    expect(seen).toEqual({ issues_copy: false });

    // run's prune drops it, and only it.
    const pipeline = await load(true, a);
    const target = pipeline.sources[0]?.targets[0];
    expect(target).toBeDefined();
    if (target === undefined) return;
    expect(dropUndeclared(target)).toEqual(['issues_copy']);
    expect(heldProjections(a)).toEqual([]);

    // One converging pass with prune: true drops it too.
    const b = await build('b.db');
    const again = await load(true, b);
    const r = await convergeOnce(again);
    expect(r.targets[0]?.dropped).toEqual(['issues_copy']);
    expect(heldProjections(b)).toEqual([]);
    // The pass prunes after it syncs: the next one builds the mirror "*" now asks for.
    await convergeOnce(again);
    expect(heldProjections(b).map((x) => x.name)).toEqual(['issues']);
  });
});
