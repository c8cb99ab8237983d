// a projection over a table that is not captured is refused up front naming the enable command
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, expectOneLineError, scalar, sha256 } from '../../cli/support/cli.ts';

/*
 * A new definition (never stored in the target) over a source table that
 * exists but is not captured cannot be synced until the table is enabled:
 * it is refused before anything is written, like an unknown column (exit 1,
 * naming the table and the enable command), not stored as a suspended
 * projection that keeps health at exit 3 until it is dropped.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeEach(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues']);
  tgt = at('cache.db');
  fs.writeFileSync(at('labels.json'), JSON.stringify({ name: 'lbl', source: 'labels', kind: 'mirror' }));
  fs.writeFileSync(at('issues.json'), JSON.stringify({ name: 'issues', source: 'issues', kind: 'mirror' }));
});
afterEach(() => removeDir(dir));

describe('a projection over a table that is not captured', () => {
  test('on a new target: refused with TABLE_UNTRACKED naming the table and `sluice enable SRC labels`, exit 1, and no target is made', async () => {
    const r = await runCliAsync(['sync', src, tgt, '--projection', at('issues.json'), '--projection', at('labels.json')]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'TABLE_UNTRACKED');
    expect(r.stderr).toContain('labels');
    expect(r.stderr).toContain(`sluice enable ${src} labels`);
    expect(fs.existsSync(tgt)).toBe(false);
  });

  test('added to a target that syncs: refused, writing nothing, and health stays green', async () => {
    expect((await runCliAsync(['sync', src, tgt, '--projection', at('issues.json')])).status).toBe(0);
    const before = sha256(tgt);
    const r = await runCliAsync(['sync', src, tgt, '--projection', at('labels.json')]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'TABLE_UNTRACKED');
    expect(r.stderr).toContain(`sluice enable ${src} labels`);
    expect(sha256(tgt)).toBe(before);
    expect(scalar(tgt, "SELECT count(*) FROM _sluice_projections WHERE name = 'lbl'")).toBe(0n);
    const health = await runCliAsync(['health', tgt]);
    expect(health.status, health.stdout).toBe(0);
    // Once enabled, the same file syncs.
    expect((await runCliAsync(['enable', src, 'labels'])).status).toBe(0);
    const ok = await runCliAsync(['sync', src, tgt, '--projection', at('labels.json')]);
    expect(ok.status, ok.stderr).toBe(0);
  });

  // SQLite names are case-blind: "source":"ISSUES" is the captured table issues, on a new target and on one that holds it.
  test('a source named in another letter case is the captured table, stored with its own spelling, on a new target and on one already holding it', async () => {
    fs.writeFileSync(at('upper.json'), JSON.stringify({ name: 'issues', source: 'ISSUES', kind: 'mirror' }));
    const fresh = await runCliAsync(['sync', src, tgt, '--projection', at('upper.json')]);
    expect(fresh.status, fresh.stderr).toBe(0);
    expect(scalar(tgt, "SELECT source_table FROM _sluice_projections WHERE name = 'issues'")).toBe('issues');
    expect(scalar(tgt, "SELECT json_extract(definition, '$.source') FROM _sluice_projections WHERE name = 'issues'")).toBe('issues');
    const other = at('other.db');
    expect((await runCliAsync(['sync', src, other, '--projection', at('issues.json')])).status).toBe(0);
    const before = sha256(other);
    const explain = await runCliAsync(['explain', src, other, '--projection', at('upper.json')]);
    expect(explain.status, explain.stderr).toBe(0);
    const again = await runCliAsync(['sync', src, other, '--projection', at('upper.json')]);
    expect(again.status, again.stderr).toBe(0);
    expect(scalar(other, "SELECT json_extract(definition, '$.source') FROM _sluice_projections WHERE name = 'issues'")).toBe('issues');
    expect(sha256(other)).toBe(before);
    // import matches the file's table case-blind too, and stores the source's spelling.
    const file = at('all.jsonl');
    expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
    const imported = await runCliAsync(['import', at('imported.db'), file, '--projection', at('upper.json')]);
    expect(imported.status, imported.stderr).toBe(0);
    expect(scalar(at('imported.db'), "SELECT json_extract(definition, '$.source') FROM _sluice_projections WHERE name = 'issues'")).toBe(
      'issues',
    );
    // The same definition over a table that is not captured names the table as the source spells it.
    fs.writeFileSync(at('labels-upper.json'), JSON.stringify({ name: 'lbl', source: 'LABELS', kind: 'mirror' }));
    const r = await runCliAsync(['sync', src, at('third.db'), '--projection', at('labels-upper.json')]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'TABLE_UNTRACKED');
    expect(r.stderr).toContain(`sluice enable ${src} labels`);
  });
});
