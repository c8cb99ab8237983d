// health and verify of a "*" target name why a captured table cannot be mirrored and a fix that works
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCli } from '../../support/fixtures.ts';
import { parseJson } from '../../cli/support/cli.ts';
import { pythonWrite } from '../../cli/support/source-state.ts';

/*
 * A target built by the default ("*": a mirror of every captured table),
 * whose source captures a table whose mirror cannot be made as it is (its
 * key compares with another collation than the column's:
 * KEY_COLLATION_MISMATCH). sync leaves it out and exits 0 at every run;
 * health said MIRROR_NOT_BUILT, exit 3, "run sluice sync ...: it builds the
 * mirror", a fix that never works. health and verify now say why it cannot
 * be mirrored (MIRROR_REFUSED, with the refusal sync gives) and what makes
 * the target whole: the table changed so, or capture taken off it.
 */
test('a captured table sync cannot mirror is MIRROR_REFUSED in health and verify, with a fix that works', ({ tmp }) => {
  const src = path.join(tmp, 'app.db');
  const tgt = path.join(tmp, 'cache.db');
  pythonWrite(
    src,
    "CREATE TABLE u (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO u VALUES (1, 'a'); CREATE TABLE t (code TEXT COLLATE NOCASE, v TEXT, PRIMARY KEY (code COLLATE BINARY)); INSERT INTO t VALUES ('a', 'x')",
  );
  expect(runCli(['enable', src, 'u', 't']).status).toBe(0);
  for (let i = 0; i < 2; i++) {
    const s = runCli(['sync', src, tgt]);
    expect(s.status, s.stderr).toBe(0);
    expect(s.stdout).toContain('t: not mirrored (KEY_COLLATION_MISMATCH: ');
  }

  const h = runCli(['health', tgt, '--json']);
  expect(h.status).toBe(3);
  const t = parseJson(h, S.healthOutput).projections.find((p) => p.name === 't');
  expect(t).toMatchObject({ state: 'pending', reason: 'MIRROR_REFUSED', needsAction: true, detail: { table: 't' } });
  expect(t?.action).toContain('KEY_COLLATION_MISMATCH: ');
  expect(t?.action).toContain(
    `MIRROR_REFUSED: change t as that refusal says, then run sluice sync ${src} ${tgt}, which builds its mirror; or, if no target needs t, stop capturing it: sluice disable ${src} t`,
  );
  expect(t?.action).not.toContain('it builds the mirror of every captured table');

  const v = runCli(['verify', src, tgt]);
  expect(v.status).toBe(3);
  expect(v.stdout).toMatch(/^u: ok/m);
  expect(v.stdout).toMatch(/^t: NOT VERIFIED MIRROR_REFUSED: .*KEY_COLLATION_MISMATCH: /m);

  // Doing what it says: capture taken off t (no target needs it), then the sync it names.
  expect(runCli(['disable', src, 't']).status).toBe(0);
  expect(runCli(['sync', src, tgt]).status).toBe(0);
  const after = runCli(['health', tgt]);
  expect(after.status, after.stdout).toBe(0);
  expect(runCli(['verify', src, tgt]).status).toBe(0);
});
