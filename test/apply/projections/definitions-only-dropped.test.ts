// a target built from definition files alone, its every projection dropped, does not take "*" at its next sync
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { parseJson, runCliAsync } from '../../cli/support/cli.ts';

/*
 * A target built only from --projection files stores its set without "*".
 * Once the user dropped every projection of it (sluice drop), its next
 * plain `sluice sync SRC TGT` took the target for a new one (no projection
 * left) and stored "*": it built a mirror of every captured table, tables
 * the user never asked this target to hold. The stored set says what the
 * target is made of; with no "*" in it, the sync has nothing to do.
 */

test('a definitions-only target whose projections were all dropped: a plain sync builds no mirror and exits 0', async ({ tmp }) => {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  const def = path.join(tmp, 'names.json');
  execFileSync('sqlite3', [src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');"]);
  fs.writeFileSync(def, JSON.stringify({ name: 'names', source: 't', kind: 'map', columns: { id: 'id', name: 'v' } }));
  for (const args of [
    ['enable', src, 't'],
    ['sync', src, tgt, '--projection', def],
    ['drop', tgt, 'names'],
  ]) {
    const r = await runCliAsync(args);
    expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  }
  const tables = () =>
    execFileSync(
      'sqlite3',
      [tgt, "SELECT group_concat(name, ' ') FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_sluice%' ESCAPE '\\'"],
      { encoding: 'utf8' },
    ).trim();
  expect(tables()).toBe('');

  const r = await runCliAsync(['sync', src, tgt, '--json']);
  expect(r.status, r.stderr).toBe(0);
  expect(parseJson(r, S.syncOutput).projections).toEqual([]);
  expect(tables()).toBe('');
  const h = await runCliAsync(['health', tgt]);
  expect(h.stdout).toContain('no projections in this target');
});
