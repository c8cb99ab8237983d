// a sluice target given as the source and its source as the target is told the arguments look swapped, not to disable capture
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { capturedAndSynced, dumpTables, expectOneLineError, runCliAsync, sha256 } from '../../cli/support/cli.ts';

/*
 * Review round 6. `verify TGT SRC`, `reinit TGT SRC t`, `explain TGT SRC`
 * and `sync TGT SRC` failed with TARGET_IS_SOURCE "... Use a separate
 * database for projections (or disable capture there first)": advice that,
 * followed, takes capture off the user's real source (its journal gone,
 * every reader rebuilt). When the file given as the source is a sluice
 * target and the one given as the target is a source, the arguments are
 * swapped: the message says so and gives the command in the right order.
 */

test('verify, reinit, explain and sync with source and target swapped name the command in the right order and write nothing', async ({
  tmp,
}) => {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  await capturedAndSynced(src, tgt);
  const before = { src: dumpTables(src), tgt: sha256(tgt) };
  const cases: [string[], string][] = [
    [['verify', tgt, src], `sluice verify ${src} ${tgt}`],
    [['reinit', tgt, src, 't'], `sluice reinit ${src} ${tgt} t`],
    [['explain', tgt, src], `sluice explain ${src} ${tgt}`],
    [['sync', tgt, src], `sluice sync ${src} ${tgt}`],
  ];
  for (const [args, inOrder] of cases) {
    const r = await runCliAsync(args);
    const what = args.join(' ');
    expect(r.status, `${what}: ${r.stderr}`).toBe(1);
    expectOneLineError(r, 'TARGET_IS_SOURCE');
    expect(r.stderr, what).toMatch(/swapped/);
    expect(r.stderr, what).toContain(inOrder);
    expect(r.stderr, what).not.toMatch(/disable/i);
  }
  expect(dumpTables(src)).toEqual(before.src);
  expect(sha256(tgt)).toBe(before.tgt);
  // Each command it names runs.
  for (const [, inOrder] of cases) {
    const fixed = await runCliAsync(inOrder.split(' ').slice(1));
    expect(fixed.status, `${inOrder}: ${fixed.stderr}`).toBe(0);
  }
});
