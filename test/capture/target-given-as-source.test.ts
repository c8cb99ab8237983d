// sync, prune and bump given a sync target for their source say it is a target and name the command on its source, not an enable that enable refuses
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test, expect } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { capturedAndSynced, dumpTables, expectOneLineError, parseJson, runCliAsync, runCliOk, sha256 } from '../cli/support/cli.ts';

/*
 * Review round 6. `sync TGT other.db`, `prune TGT` and `bump TGT --reason
 * x` failed with CAPTURE_ABSENT "Run sluice enable TGT t", and that enable
 * refuses the file (TARGET_NOT_SOURCE): a loop. They now tell a target as
 * enable and status do (TARGET_NOT_SOURCE, exit 1): the file is a sluice
 * target, not a source, and the fix is the same command on the file it is
 * synced from.
 */

test('sync, prune and bump on a target exit 1 with TARGET_NOT_SOURCE naming the command on its source, write nothing, and the named command runs', async ({
  tmp,
}) => {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  const other = path.join(tmp, 'other.db');
  const other2 = path.join(tmp, 'other2.db');
  await capturedAndSynced(src, tgt);
  await runCliOk(['sync', src, other2]);
  const before = { src: dumpTables(src), tgt: sha256(tgt), other2: sha256(other2) };
  const cases: [string[], string][] = [
    [['sync', tgt, other], `sluice sync ${src} ${other}`],
    [['sync', tgt, other2], `sluice sync ${src} ${other2}`],
    [['prune', tgt], `sluice prune ${src}`],
    [['bump', tgt, '--reason', 'x'], `sluice bump ${src} --reason x`],
  ];
  for (const [args, fix] of cases) {
    const what = args.join(' ');
    const r = await runCliAsync([...args, '--json']);
    expect(r.status, `${what}: ${r.stderr}`).toBe(1);
    expectOneLineError(r, 'TARGET_NOT_SOURCE');
    expect(parseJson(r, S.errorOutput).error.code).toBe('TARGET_NOT_SOURCE');
    expect(r.stderr, what).toContain(`${tgt} is a sluice target`);
    expect(r.stderr, what).toContain(fix);
    expect(r.stderr, what).not.toContain('sluice enable');
  }
  expect(dumpTables(src)).toEqual(before.src);
  expect(sha256(tgt)).toBe(before.tgt);
  expect(sha256(other2)).toBe(before.other2);
  expect(() => execFileSync('test', ['-e', other])).toThrow(); // no target made for a refused sync
  // Each command it names runs.
  for (const [, fix] of cases) {
    const r = await runCliAsync(fix.split(' ').slice(1));
    expect(r.status, `${fix}: ${r.stderr}`).toBe(0);
  }
});

test('export (JSONL and segments), changes, publish and disable on a target exit 1 with TARGET_NOT_SOURCE naming its source, and make no file', async ({
  tmp,
}) => {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  await capturedAndSynced(src, tgt);
  const before = sha256(tgt);
  const cases: string[][] = [
    ['export', tgt, '--out', path.join(tmp, 'x.jsonl')],
    ['export', tgt, '--out', path.join(tmp, 'segs'), '--format', 'segment'],
    ['changes', tgt],
    ['publish', tgt, '--nats', 'nats://127.0.0.1:1'],
    ['disable', tgt, 't'],
  ];
  for (const args of cases) {
    const what = args.join(' ');
    const r = await runCliAsync(args);
    expect(r.status, `${what}: ${r.stderr}`).toBe(1);
    expectOneLineError(r, 'TARGET_NOT_SOURCE');
    expect(r.stderr, what).toContain(`${tgt} is a sluice target`);
    expect(r.stderr, what).toContain(src);
    expect(r.stderr, what).not.toContain('sluice enable');
  }
  expect(sha256(tgt)).toBe(before);
  expect(fs.readdirSync(tmp).sort()).toEqual(['src.db', 'tgt.db']);
});
