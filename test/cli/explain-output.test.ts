// explain prints its documented json and exits 3 when a projection is not compatible
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, parseJson, expectOneLineError } from './support/cli.ts';
import { expectNoWrite, projections, run, syncedPair } from '../apply/support/explain.ts';

/*
 * The CLI of explain: exit 0 when every projection is Compatible, 3 when
 * any needs a rebuild or is Rejected, 1 on an error; the --json object is
 * the documented one (explainOutput); and no file changes.
 */

function definitionFile(dir: string, name: string, defs: unknown): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(defs));
  return file;
}

describe('sluice explain', () => {
  test('exits 0 when every projection is Compatible, 3 when one needs a rebuild, and writes nothing', async ({ tmp }) => {
    const defs = projections().slice(0, 3);
    const { src, tgt } = await syncedPair(tmp, defs);
    const same = definitionFile(tmp, 'same.json', defs);
    const porter = definitionFile(tmp, 'porter.json', [...defs.slice(0, 2), { ...(defs[2] as object), tokenize: 'porter' }]);
    const ok = await expectNoWrite(tmp, () => runCliAsync(['explain', src, tgt, '--projection', same, '--json']));
    expect(ok.status, ok.stderr).toBe(0);
    const r = parseJson(ok, S.explainOutput);
    expect(r.ok).toBe(true);
    expect(r.projections.map((p) => [p.name, p.classification, p.reason])).toEqual([
      ['items', 'Compatible', 'ALTER_UNCHANGED'],
      ['cheap', 'Compatible', 'ALTER_UNCHANGED'],
      ['search', 'Compatible', 'ALTER_UNCHANGED'],
    ]);
    // With no --projection: the target's stored definitions.
    const stored = await expectNoWrite(tmp, () => runCliAsync(['explain', src, tgt, '--json']));
    expect(stored.status, stored.stderr).toBe(0);

    const rebuild = await expectNoWrite(tmp, () => runCliAsync(['explain', src, tgt, '--projection', porter, '--json']));
    expect(rebuild.status, rebuild.stderr).toBe(3);
    const search = parseJson(rebuild, S.explainOutput).projections.find((p) => p.name === 'search');
    expect([search?.classification, search?.reason, search?.affected]).toEqual(['Rebuildable', 'ALTER_FTS_OPTIONS_CHANGED', ['auxiliary']]);
    expect(search?.inputs.old?.fingerprint).not.toBe(search?.inputs.new.fingerprint);
    expect(search?.cost.rows).toBe(4);

    const text = await runCliAsync(['explain', src, tgt, '--projection', porter]);
    expect(text.status).toBe(3);
    expect(text.stdout).toContain('search [fts5]: Rebuildable ALTER_FTS_OPTIONS_CHANGED, affects auxiliary (rebuild: 4 rows');
    expect(text.stdout).toMatch(/fingerprint [0-9a-f]{16} -> [0-9a-f]{16}/);
  });

  test('a Rejected change exits 3 and names its repair; a source DDL change is explained from the stored definitions', async ({ tmp }) => {
    const defs = projections().slice(0, 3);
    const { src, tgt } = await syncedPair(tmp, defs);
    // A rename by another program is not recorded: the column qty is gone, and amount is a new one.
    run(src, 'ALTER TABLE items RENAME COLUMN qty TO amount');
    const r = await expectNoWrite(tmp, () => runCliAsync(['explain', src, tgt, '--json']));
    expect(r.status, r.stderr).toBe(3);
    const p = Object.fromEntries(parseJson(r, S.explainOutput).projections.map((x) => [x.name, x]));
    expect([p.cheap?.classification, p.cheap?.reason]).toEqual(['Rejected', 'ALTER_SOURCE_COLUMN_DROPPED']);
    expect(p.cheap?.repair).toContain(`pass it with --projection to sluice sync ${src} ${tgt}`);
    expect([p.search?.classification, p.search?.reason]).toEqual(['Rebuildable', 'ALTER_SOURCE_COLUMN_UNUSED']);
  });

  test('a target that does not exist is an error, exit 1, and is not created', async ({ tmp }) => {
    const { src } = await syncedPair(tmp, projections().slice(0, 1));
    const missing = path.join(tmp, 'nope.db');
    const r = await runCliAsync(['explain', src, missing]);
    expect(r.status).toBe(1);
    expectOneLineError(r, 'DB_NOT_FOUND');
    expect(fs.existsSync(missing)).toBe(false);
  });
});
