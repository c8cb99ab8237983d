// health --config (and /healthz) do not call a mirror that only the source's DDL reshaped "held as built from another definition"
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, runCli, test } from '../support/fixtures.ts';
import { py } from './support/run.ts';
import { convergeOnce, loadPipeline } from '../../src/pipeline/index.ts';
import { pipelineHealthOutput, planOutput } from '../../src/cli/index.ts';

/*
 * Another program renames a column of a table "*" mirrors, and its capture
 * is re-armed (by sluice enable, or by sluice run's capture part before its
 * next pass): the mirror now compiles to another fingerprint, so plan says
 * it is rebuilt (DEFINITION_CHANGED, as sync reports it). The file's
 * definition is the one the target holds, though: only the source changed,
 * and every sync rebuilds such a mirror by itself, as health says. health
 * --config (and /healthz, through the same rule) marked it as needing
 * action, "held as built from another definition than the file declares":
 * under sluice run a /healthz reading taken before the rebuild said so of a
 * mirror nobody had to touch. A definition the file changed still needs it.
 */

const SCHEMA = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO items VALUES (1, 'apple pie');
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
INSERT INTO notes VALUES (1, 'first');
`;

const FILE = (projections: string) => `sources:
  - path: app.db
    capture: [items, notes]
    targets:
      - path: cache.db
        projections: ${projections}
`;

function health(file: string): { code: number; needs: [string, boolean][]; problems: string[] } {
  const r = runCli(['health', '--config', file, '--json']);
  const h = pipelineHealthOutput.parse(JSON.parse(r.stdout));
  return {
    code: r.status ?? -1,
    needs: (h.targets[0]?.projections ?? []).map((p) => [p.name, p.needsAction] as [string, boolean]),
    problems: h.problems,
  };
}

describe('a mirror only the source reshaped', () => {
  test('a column renamed by another program and the table re-armed: plan rebuilds it, not redefined, and health --config does not call it held from another definition', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, FILE('["*"]'));
    expect((await convergeOnce(await loadPipeline(file))).targets[0]?.error).toBeNull();
    expect(health(file).code).toBe(0);
    const src = path.join(tmp, 'app.db');
    py(src, `con.execute("ALTER TABLE items RENAME COLUMN name TO title")`);
    // Re-armed, as sluice run's capture part does before its pass.
    expect(runCli(['enable', src, 'items']).status).toBe(0);
    const plan = planOutput.parse(JSON.parse(runCli(['plan', '--config', file, '--json']).stdout));
    const items = plan.targets[0]?.projections.find((p) => p.name === 'items');
    expect(items).toMatchObject({ does: 'rebuild', reason: 'DEFINITION_CHANGED', redefined: false });
    const h = health(file);
    expect(h.problems.filter((p) => p.includes('another definition'))).toEqual([]);
    expect(h.needs).toEqual(expect.arrayContaining([['items', false]]));
    expect(h.code).toBe(0);
    // The pass rebuilds it, and the mirror holds the renamed column.
    expect((await convergeOnce(await loadPipeline(file))).targets[0]?.error).toBeNull();
    expect(health(file).code).toBe(0);
  });

  test('a definition the file changed is still held from another definition until the pass: health --config exits 3 naming it', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, FILE(`[{name: m, source: items, kind: map, columns: {id: id, name: name}}]`));
    expect((await convergeOnce(await loadPipeline(file))).targets[0]?.error).toBeNull();
    fs.writeFileSync(file, FILE(`[{name: m, source: items, kind: map, columns: {id: id, name: {expr: "upper(name)"}}}]`));
    const plan = planOutput.parse(JSON.parse(runCli(['plan', '--config', file, '--json']).stdout));
    expect(plan.targets[0]?.projections.find((p) => p.name === 'm')).toMatchObject({ does: 'rebuild', redefined: true });
    const h = health(file);
    expect(h.code).toBe(3);
    expect(h.problems.some((p) => p.includes('m') && p.includes('another definition'))).toBe(true);
  });
});
