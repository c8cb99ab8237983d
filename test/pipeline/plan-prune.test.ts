// plan with prune: true lists everything the next pass removes, "*" taken out of a target's set included
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { describe, expect, runCli, test, filesIn } from '../support/fixtures.ts';
import { convergeOnce, loadPipeline } from '../../src/pipeline/index.ts';
import { planOutput } from '../../src/cli/index.ts';

/*
 * With prune: true a pass removes what the file no longer declares
 * (src/pipeline/prune.ts): the projections a target holds beyond its
 * declaration, the acknowledgements of targets and projections no longer
 * declared, and "*" from the projection set of a target whose declaration
 * no longer lists it (else a plain sluice sync of it would mirror every
 * table captured later). plan listed the first two but not the third: for
 * a target that stored "*" and now declares its mirrors by name, it said
 * "nothing to do" (converged) while the pass wrote to the target. plan
 * lists it (drop "*"), and once the pass has run says nothing to do.
 */

const SCHEMA = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO items VALUES (1, 'apple pie');
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
INSERT INTO notes VALUES (1, 'first');
`;

const BEFORE = `sources:
  - path: app.db
    capture: [items, notes]
    targets:
      - path: cache.db
        projections: ["*"]
`;

describe('plan with prune: true', () => {
  test.for([
    ['each mirror declared by name', '[{name: items, source: items, kind: mirror}, {name: notes, source: notes, kind: mirror}]', []],
    ['the mirror of notes no longer declared', '[{name: items, source: items, kind: mirror}]', ['notes']],
  ] as const)(
    '"*" taken out of the file (%s): plan lists drop "*" (and what else the pass removes), not "nothing to do"; after the pass it is',
    async ([, projections, alsoDropped], { tmp, makeDb }) => {
      makeDb('app.db', SCHEMA).db.close();
      const file = path.join(tmp, 'sluice.yml');
      fs.writeFileSync(file, BEFORE);
      expect((await convergeOnce(await loadPipeline(file))).targets[0]?.error).toBeNull();
      fs.writeFileSync(file, `${BEFORE.replace('["*"]', projections)}prune: true\n`);

      const before = filesIn(tmp);
      const human = runCli(['plan', '--config', file]);
      expect(human.status, human.stderr).toBe(0);
      expect(human.stdout).not.toContain('nothing to do');
      expect(human.stdout).toMatch(/^ {2}drop "\*": prune: true: sluice run takes "\*" out of the projection set of .*cache\.db/m);
      for (const name of alsoDropped) expect(human.stdout).toMatch(new RegExp(`^ {2}drop ${name}: prune: true: sluice run drops it$`, 'm'));
      const plan = planOutput.parse(JSON.parse(runCli(['plan', '--config', file, '--json']).stdout));
      expect(plan.converged).toBe(false);
      const dropped = plan.targets[0]?.projections.filter((p) => p.does === 'drop').map((p) => p.name);
      expect(filesIn(tmp), 'plan wrote nothing').toEqual(before);

      const pass = await convergeOnce(await loadPipeline(file));
      expect(pass.targets[0]?.dropped.slice().sort(), 'the pass removes what plan listed').toEqual(dropped?.slice().sort());
      expect(dropped?.slice().sort()).toEqual([...alsoDropped, '"*"'].sort());
      expect(runCli(['plan', '--config', file]).stdout).toContain('nothing to do');
    },
  );

  test('a target whose sync is refused: what the pass cannot drop yet is listed undeclared, saying it is dropped once the refusal is fixed', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, BEFORE);
    expect((await convergeOnce(await loadPipeline(file))).targets[0]?.error).toBeNull();
    // A map of a column items does not have: the target's sync is refused as a whole, and a pass drops nothing of it.
    fs.writeFileSync(
      file,
      `${BEFORE.replace('["*"]', '[{name: items, source: items, kind: mirror}, {name: m, source: items, kind: map, columns: {id: id, x: nope}}]')}prune: true\n`,
    );
    const plan = planOutput.parse(JSON.parse(runCli(['plan', '--config', file, '--json']).stdout));
    expect(plan.targets[0]?.refused?.code).toBe('UNKNOWN_COLUMN');
    const later = plan.targets[0]?.projections.filter((p) => p.does === 'undeclared');
    expect(later?.map((p) => p.name).sort()).toEqual(['"*"', 'notes']);
    for (const p of later ?? [])
      expect(p.fix, p.name).toMatch(/^prune: true: sluice run .* once the target's sync is no longer refused \(UNKNOWN_COLUMN\)/);
    const pass = await convergeOnce(await loadPipeline(file));
    expect(pass.targets[0]?.error?.code).toBe('UNKNOWN_COLUMN');
    expect(pass.targets[0]?.dropped).toEqual([]);
  });
});
