// a projection file whose source column is gone is suspended with its reason while the others apply
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runPython } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { alterWithForecast } from '../../../src/apply/evolution/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  write,
  scalar,
  sha256,
  startCli,
  waitFor,
  expectOneLineError,
  type Spawned,
} from '../../cli/support/cli.ts';

/*
 * A definition given with --projection that the target stores (it compiled
 * against the source before) and that no longer compiles because the source
 * changed (a column it reads dropped or renamed, by sluice alter or by
 * another program) is a source change (reference 003): that projection is
 * suspended with its reason, the others apply their batches, sync exits 3
 * and health names it with its repair. A definition never stored that does
 * not compile (a typo) is still an input error that writes nothing. A
 * follower keeps following the others, re-reads the file when it changes,
 * and takes the projection up again once it compiles.
 */

let dir: string;
let src: string;
let tgt: string;
let running: Spawned | undefined;
const at = (f: string) => path.join(dir, f);
const U = { name: 'u', source: 'labels', kind: 'mirror' };
const AUTHORS = { name: 'tab', source: 'issues', kind: 'map', columns: { repo_id: 'repo_id', number: 'number', author: 'author' } };
const FIXED = { name: 'tab', source: 'issues', kind: 'map', columns: { repo_id: 'repo_id', number: 'number', title: 'title' } };

beforeEach(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'labels']);
  tgt = at('cache.db');
  fs.writeFileSync(at('u.json'), JSON.stringify(U));
  fs.writeFileSync(at('tab.json'), JSON.stringify(AUTHORS));
  // The first sync is setup, through the library (a CLI spawn costs ~1 s): the same definitions as the files.
  await sync(src, tgt, { projections: [U, AUTHORS] as ProjectionDefinitionInput[] });
});
afterEach(() => {
  if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  running = undefined;
  removeDir(dir);
});

const byName = (r: { stdout: string; stderr: string }) =>
  Object.fromEntries(parseJson(r, S.syncOutput).projections.map((p) => [p.name, p]));
const labels = (file: string) => Number(scalar(file, 'SELECT count(*) FROM labels'));
const mirrored = () => Number(scalar(tgt, 'SELECT count(*) FROM labels'));
const addLabel = (name: string) => write(src, `INSERT INTO labels (repo_id, name, color) VALUES (1, '${name}', x'01')`);

async function expectSuspendedBesideU(): Promise<void> {
  addLabel('after-the-change');
  const r = await runCliAsync(['sync', src, tgt, '--projection', at('u.json'), '--projection', at('tab.json'), '--json']);
  expect(r.status, r.stderr).toBe(3);
  const p = byName(r);
  expect(p.tab).toMatchObject({ state: 'suspended', reason: 'SOURCE_COLUMN_MISSING' });
  expect(JSON.stringify(p.tab?.detail)).toMatch(/author/);
  expect(p.u).toMatchObject({ state: 'active', applied: 1 });
  expect(mirrored()).toBe(labels(src));
  const health = await runCliAsync(['health', tgt, '--json']);
  expect(health.status, health.stderr).toBe(3);
  const h = parseJson(health, S.healthOutput);
  const tab = h.projections.find((x) => x.name === 'tab');
  expect(tab).toMatchObject({ state: 'suspended', reason: 'SOURCE_COLUMN_MISSING', needsAction: true });
  expect(tab?.action).toContain(`--projection`);
  expect(h.projections.find((x) => x.name === 'u')).toMatchObject({ needsAction: false });
}

describe('a --projection file whose source column is gone', () => {
  test('dropped by sluice alter: it is suspended with SOURCE_COLUMN_MISSING, the unrelated mirror applies its batch, sync exits 3, health exits 3 naming it', async () => {
    await alterWithForecast(src, 'ALTER TABLE issues DROP COLUMN author'); // what `sluice alter` runs, through the library
    await expectSuspendedBesideU();
    // Fixing the file takes it up again: rebuilt from the definition that compiles, and health is green.
    fs.writeFileSync(at('tab.json'), JSON.stringify(FIXED));
    const fixed = await runCliAsync(['sync', src, tgt, '--projection', at('u.json'), '--projection', at('tab.json'), '--json']);
    expect(fixed.status, fixed.stderr).toBe(0);
    expect(byName(fixed).tab).toMatchObject({ state: 'active', rebuilt: 'DEFINITION_CHANGED' });
    const health = await runCliAsync(['health', tgt]);
    expect(health.status, health.stdout + health.stderr).toBe(0);
  });

  test('renamed by another program (Python): the same, and putting the column back is enough', async () => {
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("ALTER TABLE issues RENAME COLUMN author TO writer")
con.commit()`,
      [src],
    );
    await expectSuspendedBesideU();
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("ALTER TABLE issues RENAME COLUMN writer TO author")
con.commit()`,
      [src],
    );
    const back = await runCliAsync(['sync', src, tgt, '--projection', at('u.json'), '--projection', at('tab.json'), '--json']);
    expect(back.status, back.stderr).toBe(0);
    expect(byName(back).tab).toMatchObject({ state: 'active' });
  });

  test('a definition never stored that does not compile (a typo in a new file, or in the edited file) is an input error, exit 1, writing nothing', async () => {
    const before = sha256(tgt);
    addLabel('not-applied');
    fs.writeFileSync(
      at('typo.json'),
      JSON.stringify({ name: 'typo', source: 'issues', kind: 'map', columns: { repo_id: 'repo_id', number: 'number', a: 'autor' } }),
    );
    const typo = await runCliAsync(['sync', src, tgt, '--projection', at('u.json'), '--projection', at('typo.json')]);
    expect(typo.status).toBe(1);
    expectOneLineError(typo, 'UNKNOWN_COLUMN');
    fs.writeFileSync(at('tab.json'), JSON.stringify({ ...AUTHORS, columns: { ...AUTHORS.columns, author: 'autor' } }));
    const edited = await runCliAsync(['sync', src, tgt, '--projection', at('u.json'), '--projection', at('tab.json')]);
    expect(edited.status).toBe(1);
    expectOneLineError(edited, 'UNKNOWN_COLUMN');
    expect(sha256(tgt)).toBe(before);
  });

  test('under sync --follow: the others keep applying, and the projection is taken up again once its file compiles', async () => {
    running = startCli(['sync', src, tgt, '--projection', at('u.json'), '--projection', at('tab.json'), '--follow', '--json']);
    const f = running;
    const passes = () =>
      f
        .stdout()
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => S.syncOutput.parse(JSON.parse(l)));
    await waitFor('the first pass', () => passes().length > 0);
    await alterWithForecast(src, 'ALTER TABLE issues DROP COLUMN author'); // what `sluice alter` runs, through the library
    addLabel('while-following');
    await waitFor(
      'tab suspended and u applied',
      () =>
        passes().some((p) => p.projections.some((x) => x.name === 'tab' && x.reason === 'SOURCE_COLUMN_MISSING')) &&
        mirrored() === labels(src),
      20_000,
    );
    expect(f.child.exitCode, f.stderr()).toBeNull();
    const health = await runCliAsync(['health', tgt]);
    expect(health.status).toBe(3);
    expect(health.stdout).toMatch(/tab/);
    // The file fixed (no commit to the source needed): the follower re-reads it and rebuilds the projection.
    fs.writeFileSync(at('tab.json'), JSON.stringify(FIXED));
    await waitFor('tab active again', () => scalar(tgt, "SELECT state FROM _sluice_projections WHERE name = 'tab'") === 'active', 20_000);
    addLabel('after-the-fix');
    await waitFor('u still applying', () => mirrored() === labels(src), 20_000);
    const green = await runCliAsync(['health', tgt]);
    expect(green.status, green.stdout).toBe(0);
    f.child.kill('SIGTERM');
    expect((await f.exited).status).toBe(0);
  });
});
