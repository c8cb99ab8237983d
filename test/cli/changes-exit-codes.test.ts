// changes exits 3 for a cursor that must rebuild and 1 for a malformed one
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { cursorLineSchema } from '../../src/feed/index.ts';
import { runCliAsync, mapLimit, makeDir, removeDir, trackerSource, write, expectOneLineError, parseJson } from './support/cli.ts';

let dir: string;
let src: string;
let other: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues']);
  other = trackerSource(at('other.db'), ['issues']);
  write(src, "UPDATE issues SET title = 'x' || number WHERE repo_id = 1 AND number <= 3");
});
afterAll(() => removeDir(dir));

async function cursorOf(db: string): Promise<string> {
  const r = await runCliAsync(['changes', db]);
  expect(r.status, r.stderr).toBe(0);
  return cursorLineSchema.parse(JSON.parse(r.stdout.trimEnd().split('\n').at(-1) as string)).cursor;
}

describe('changes --since', () => {
  test('a cursor from another source, or from before a bump, exits 3 with its reason code', async () => {
    const [mine, foreign] = await Promise.all([cursorOf(src), cursorOf(other)]);
    const wrongSource = await runCliAsync(['changes', src, '--since', foreign]);
    expect(wrongSource.status, wrongSource.stderr).toBe(3);
    expectOneLineError(wrongSource, 'SOURCE_CHANGED');
    expect(wrongSource.stdout).toBe('');

    const bump = await runCliAsync(['bump', src, '--reason', 'restored from backup', '--json']);
    expect(parseJson(bump, S.bumpOutput).generation).toBe(2);
    const stale = await runCliAsync(['changes', src, '--since', mine]);
    expect(stale.status, stale.stderr).toBe(3);
    expectOneLineError(stale, 'GENERATION_CHANGED');
    expect(stale.stdout).toBe('');
    // And with --json, the code is on stdout as well.
    const json = await runCliAsync(['changes', src, '--since', mine, '--json']);
    expect(json.status, json.stderr).toBe(3);
    expect(parseJson(json, S.errorOutput).error.code).toBe('GENERATION_CHANGED');
  });

  test('a malformed cursor exits 1 with CURSOR_MALFORMED', async () => {
    const good = await cursorOf(src);
    const [prefix, payload, check] = good.split('.') as [string, string, string];
    const flipped = `${payload.slice(0, 10)}${payload[10] === 'A' ? 'B' : 'A'}${payload.slice(11)}`;
    // Not a cursor at all, one cut short, and one whose payload no longer matches its check.
    const bad = ['garbage', `${prefix}.${payload}`, `${prefix}.${flipped}.${check}`];
    const results = await mapLimit(bad, 4, (c) => runCliAsync(['changes', src, '--since', c]));
    for (const [i, r] of results.entries()) {
      expect(r.status, `${bad[i]}: ${r.stderr}`).toBe(1);
      expectOneLineError(r, 'CURSOR_MALFORMED');
      expect(r.stdout).toBe('');
    }
  });
});
