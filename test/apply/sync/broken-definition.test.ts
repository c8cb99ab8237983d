// a stored projection that no longer compiles is suspended in its own row and the others sync
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, write, scalar, syncByLibrary } from '../../cli/support/cli.ts';

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeEach(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'labels']);
  tgt = at('cache.db');
  fs.writeFileSync(
    at('authors.json'),
    JSON.stringify({ name: 'authors', source: 'issues', kind: 'map', columns: { repo_id: 'repo_id', number: 'number', author: 'author' } }),
  );
  fs.writeFileSync(at('labels.json'), JSON.stringify({ name: 'labels', source: 'labels', kind: 'mirror' }));
  // The first sync is the setup, through the library (what the CLI runs); the tests run the CLI's.
  expect(await syncByLibrary(src, tgt, [at('authors.json'), at('labels.json')])).toBe(0);
});
afterEach(() => removeDir(dir));

const byName = (r: { stdout: string; stderr: string }) =>
  Object.fromEntries(parseJson(r, S.syncOutput).projections.map((p) => [p.name, p]));
const labelCount = () => Number(scalar(tgt, 'SELECT count(*) FROM labels'));

describe('a stored projection that no longer compiles', () => {
  test('a map whose source column was renamed is suspended with SOURCE_COLUMN_MISSING and its repair, the others sync, and sync exits 3', async () => {
    const before = labelCount();
    write(
      src,
      "ALTER TABLE issues RENAME COLUMN author TO writer; INSERT INTO labels (repo_id, name, color) VALUES (1, 'new-label', x'01')",
    );
    const r = await runCliAsync(['sync', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const p = byName(r);
    expect(p.authors).toMatchObject({ state: 'suspended', reason: 'SOURCE_COLUMN_MISSING' });
    expect(JSON.stringify(p.authors?.detail)).toMatch(/author/);
    expect(p.labels).toMatchObject({ state: 'active', applied: 1 });
    expect(labelCount()).toBe(before + 1);
    // Stored in its own row, with the repair in the text report and in health.
    expect(scalar(tgt, "SELECT state || ' ' || reason FROM _sluice_projections WHERE name = 'authors'")).toBe(
      'suspended SOURCE_COLUMN_MISSING',
    );
    const text = await runCliAsync(['sync', src, tgt]);
    expect(text.status, text.stderr).toBe(3);
    expect(text.stdout).toMatch(/authors: SUSPENDED SOURCE_COLUMN_MISSING .*--projection/);
    const health = await runCliAsync(['health', tgt]);
    expect(health.status, health.stderr).toBe(3);
    expect(health.stdout + health.stderr).toMatch(/SOURCE_COLUMN_MISSING.*--projection/);

    // --reinit cannot rebuild it from a definition that does not compile: refused, naming why and the fix, writing nothing.
    const reinit = await runCliAsync(['sync', src, tgt, '--reinit', 'authors']);
    expect(reinit.status).toBe(1);
    expect(reinit.stderr).toMatch(/^sluice: SOURCE_COLUMN_MISSING: Cannot reinit authors: .*author.*--projection/);

    // Putting the column back is enough: the next sync rebuilds it and all are active.
    write(src, 'ALTER TABLE issues RENAME COLUMN writer TO author');
    const back = await runCliAsync(['sync', src, tgt, '--json']);
    expect(back.status, back.stderr).toBe(0);
    expect(byName(back).authors).toMatchObject({ state: 'active' });
    const v = await runCliAsync(['verify', src, tgt, '--json']);
    expect(v.status, v.stdout).toBe(0);
  });

  test('a stored definition that no longer validates is suspended with DEFINITION_INVALID, the others sync, and a corrected --projection repairs it', async () => {
    write(tgt, `UPDATE _sluice_projections SET definition = '{"name":"authors","source":"issues","kind":"bogus"}' WHERE name = 'authors'`);
    write(src, "INSERT INTO labels (repo_id, name, color) VALUES (1, 'new-label', x'01')");
    const r = await runCliAsync(['sync', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const p = byName(r);
    expect(p.authors).toMatchObject({ state: 'suspended', reason: 'DEFINITION_INVALID' });
    expect(p.labels).toMatchObject({ state: 'active', applied: 1 });

    const fixed = await runCliAsync(['sync', src, tgt, '--projection', at('authors.json'), '--json']);
    expect(fixed.status, fixed.stderr).toBe(0);
    expect(byName(fixed).authors).toMatchObject({ state: 'active' });
    // What the report says is what is stored: the row active, with the definition that compiled.
    expect(scalar(tgt, "SELECT state FROM _sluice_projections WHERE name = 'authors'")).toBe('active');
    expect(JSON.parse(String(scalar(tgt, "SELECT definition FROM _sluice_projections WHERE name = 'authors'")))).toMatchObject({
      kind: 'map',
    });
    // And it stays repaired: a plain sync (the stored definitions) keeps it active, and health is green.
    const plain = await runCliAsync(['sync', src, tgt, '--json']);
    expect(plain.status, plain.stderr).toBe(0);
    expect(byName(plain).authors).toMatchObject({ state: 'active' });
    const health = await runCliAsync(['health', tgt]);
    expect(health.status, health.stdout + health.stderr).toBe(0);
  });

  test('a projection whose source table was dropped is suspended with SOURCE_TABLE_MISSING and verify does not call it ok', async () => {
    write(src, "DROP TABLE labels; UPDATE issues SET title = 'moved' WHERE number = 1");
    const r = await runCliAsync(['sync', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const p = byName(r);
    expect(p.labels).toMatchObject({ state: 'suspended', reason: 'SOURCE_TABLE_MISSING' });
    expect(p.authors?.state).toBe('active');
    expect(p.authors?.applied).toBeGreaterThan(0);
    const v = await runCliAsync(['verify', src, tgt, '--json']);
    expect(v.status, v.stderr).toBe(3);
    expect(parseJson(v, S.verifyOutput).projections.find((x) => x.name === 'labels')).toMatchObject({
      ok: false,
      reason: 'SOURCE_TABLE_MISSING',
    });
  });

  test('an invalid definition passed with --projection is still an input error that writes nothing', async () => {
    fs.writeFileSync(
      at('bad.json'),
      JSON.stringify({ name: 'authors', source: 'issues', kind: 'map', columns: { repo_id: 'repo_id', number: 'number', who: 'nobody' } }),
    );
    const r = await runCliAsync(['sync', src, tgt, '--projection', at('bad.json')]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/UNKNOWN_COLUMN/);
    expect(scalar(tgt, "SELECT state FROM _sluice_projections WHERE name = 'authors'")).toBe('active');
  });
});
