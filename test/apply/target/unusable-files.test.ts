// a missing file a non database or a target that is a source fails with one line
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import {
  runCliAsync,
  mapLimit,
  makeDir,
  removeDir,
  trackerSource,
  expectOneLineError,
  parseJson,
  sha256,
  dumpTables,
  exportByLibrary,
  scalar,
  type CliResult,
} from '../../cli/support/cli.ts';

/*
 * Bad inputs are errors (exit 1) reported on one stderr line,
 * `sluice: CODE: message` naming the file, without a stack trace; with
 * --json stdout carries {"error": {code, message}}. And a failed command
 * creates nothing: not the missing file, not a target, not an output.
 */

let dir: string;
let src: string; // capture enabled
let other: string; // another source, capture enabled
let text: string; // not a database
let exportFile: string;
let target: string; // a real target of src
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  other = trackerSource(at('other.db'), ['issues']);
  text = at('notes.db');
  fs.writeFileSync(text, 'these are my notes, not a database\n'.repeat(20));
  target = at('target.db');
  await sync(src, target);
  exportFile = at('app.jsonl');
  exportByLibrary(src, exportFile);
});
afterAll(() => removeDir(dir));

async function runAll(cases: Record<string, string[]>): Promise<Map<string, CliResult>> {
  const entries = Object.entries(cases);
  const results = await mapLimit(entries, 4, async ([name, args]) => [name, await runCliAsync([...args, '--json'], { cwd: dir })] as const);
  return new Map(results);
}

function expectError(name: string, r: CliResult | undefined, code: string, mentions: string): void {
  expect(r, name).toBeDefined();
  const res = r as CliResult;
  expect(res.status, `${name}: ${res.stderr}`).toBe(1);
  expectOneLineError(res, code);
  expect(res.stderr, name).toContain(mentions);
  const out = parseJson(res, S.errorOutput);
  expect(out.error.code, name).toBe(code);
}

describe('a missing file', () => {
  // One command per way of opening a file (disable, bump and prune open a source exactly as enable does).
  test('every command exits 1 with DB_NOT_FOUND (or IMPORT_NOT_FOUND) and creates nothing', async () => {
    const missing = 'missing.db';
    const cases: Record<string, string[]> = {
      enable: ['enable', missing, 'issues'],
      status: ['status', missing],
      changes: ['changes', missing],
      'sync (source)': ['sync', missing, 'new-target.db'],
      'verify (source)': ['verify', missing, target],
      'verify (target)': ['verify', src, missing],
      export: ['export', missing, '--out', 'new.jsonl'],
      health: ['health', missing],
      query: ['query', missing, 'SELECT 1'],
      strip: ['strip', missing, '--out', 'new-copy.db'],
    };
    const results = await runAll({ ...cases, 'import (file)': ['import', 'new-target.db', 'missing.jsonl'] });
    for (const name of Object.keys(cases)) expectError(name, results.get(name), 'DB_NOT_FOUND', missing);
    expectError('import (file)', results.get('import (file)'), 'IMPORT_NOT_FOUND', 'missing.jsonl');
    // Nothing was created: not the missing file, not a target, an output or a copy.
    expect(fs.readdirSync(dir).filter((f) => /^(missing|new)/.test(f))).toEqual([]);
  });
});

describe('a file that is not a database', () => {
  test('every command exits 1 with NOT_A_DATABASE and leaves the file as it was', async () => {
    const before = sha256(text);
    const targetBefore = sha256(target);
    const cases: Record<string, string[]> = {
      enable: ['enable', text, 'issues'],
      status: ['status', text],
      changes: ['changes', text],
      'sync (source)': ['sync', text, 'new-target.db'],
      'sync (target)': ['sync', src, text],
      'verify (source)': ['verify', text, target],
      'verify (target)': ['verify', src, text],
      export: ['export', text, '--out', 'new.jsonl'],
      'import (target)': ['import', text, exportFile],
      health: ['health', text],
      query: ['query', text, 'SELECT 1'],
      strip: ['strip', text, '--out', 'new-copy.db'],
    };
    const results = await runAll(cases);
    for (const name of Object.keys(cases)) expectError(name, results.get(name), 'NOT_A_DATABASE', text);
    expect(sha256(text)).toBe(before);
    expect(sha256(target)).toBe(targetBefore);
    expect(fs.readdirSync(dir).filter((f) => /^new/.test(f) || f.startsWith('notes.db-'))).toEqual([]);
  });

  test('importing a file that is not an export stops at its first line', async () => {
    const r = await runCliAsync(['import', at('imported-notes.db'), text]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'IMPORT_MALFORMED_LINE');
    expect(r.stderr).toContain(`${text}:1:`);
  });
});

describe('a target that is a source', () => {
  test('sync, verify and import refuse with TARGET_IS_SOURCE and change neither database', async () => {
    const srcBefore = dumpTables(src);
    const otherBefore = dumpTables(other);
    const link = at('app-link.db');
    let linked = true;
    try {
      fs.symlinkSync(src, link);
    } catch {
      linked = false; // Windows without the symlink privilege
    }
    const hard = at('app-hard.db');
    fs.linkSync(src, hard);
    const results = await runAll({
      'sync into a capture-enabled db': ['sync', src, other],
      'sync into the same path': ['sync', src, src],
      'sync into the same file by another name': ['sync', src, path.join('..', path.basename(dir), 'app.db')],
      ...(linked ? { 'sync into a symlink to the source': ['sync', src, link] } : {}),
      'sync into a hard link to the source': ['sync', src, hard],
      'verify against the same path': ['verify', src, src],
      'verify against a hard link to the source': ['verify', src, hard],
      'import into a capture-enabled db': ['import', other, exportFile],
      'import into the source itself': ['import', src, exportFile],
    });
    for (const [name, r] of results) expectError(name, r, 'TARGET_IS_SOURCE', '');
    expect(results.get('sync into a capture-enabled db')?.stderr).toContain(other);
    // Neither side got rows or target metadata.
    expect(dumpTables(src)).toEqual(srcBefore);
    expect(dumpTables(other)).toEqual(otherBefore);
    expect(scalar(other, "SELECT count(*) FROM sqlite_schema WHERE name IN ('_sluice_projections', '_sluice_target')")).toBe(0n);
  });
});

describe('an empty target path (an unset shell variable)', () => {
  test('sync and import exit 1 with BAD_PATH, where SQLite made a temporary database of it and they reported success; the source records no consumer for it', async () => {
    const consumers = () => scalar(src, 'SELECT count(*) FROM _sluice_consumers');
    const before = consumers();
    const results = await runAll({ sync: ['sync', src, ''], import: ['import', '', exportFile] });
    for (const [name, r] of results) expectError(name, r, 'BAD_PATH', 'path is empty');
    expect(consumers()).toBe(before);
  });
});
