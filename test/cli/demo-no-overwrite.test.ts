// the demo never overwrites a file it did not make
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, expectOneLineError, sha256 } from './support/cli.ts';

/*
 * `sluice demo --dir DIR` makes tracker.db and cache.db in DIR and replaces
 * them on every run. It knows which it made by the marker file it writes
 * there first (.sluice-demo): a DIR holding a file of one of those names
 * without the marker is a user's, and the demo refuses (exit 1) before it
 * writes anything, leaving every file as it was. Into a DIR it made itself,
 * it runs again; beside unrelated files, it runs and leaves them be.
 */

let dir: string;
const at = (...f: string[]) => path.join(dir, ...f);

beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

function userDatabase(file: string): void {
  const db = openDatabase(file, { create: true });
  try {
    db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('my own data')");
  } finally {
    db.close();
  }
}

describe('the demo and the files in its --dir', () => {
  for (const name of ['cache.db', 'tracker.db', 'tracker.db-wal']) {
    test(`a DIR holding a user's ${name} is refused with exit 1 naming it, and every file in DIR is byte-identical`, async () => {
      const userDir = at(`user-${name}`);
      fs.mkdirSync(userDir);
      if (name.endsWith('.db')) userDatabase(path.join(userDir, name));
      else fs.writeFileSync(path.join(userDir, name), "not the demo's\n");
      fs.writeFileSync(path.join(userDir, 'notes.txt'), 'mine\n');
      const before = Object.fromEntries(fs.readdirSync(userDir).map((f) => [f, sha256(path.join(userDir, f))]));
      const r = await runCliAsync(['demo', '--dir', userDir, '--json']);
      expect(r.status, r.stderr).toBe(1);
      expectOneLineError(r, 'DEMO_WOULD_OVERWRITE');
      expect(r.stderr).toContain(path.join(userDir, name));
      expect(parseJson(r, S.errorOutput).error.code).toBe('DEMO_WOULD_OVERWRITE');
      expect(Object.fromEntries(fs.readdirSync(userDir).map((f) => [f, sha256(path.join(userDir, f))]))).toEqual(before);
    });
  }

  test('a DIR that is a file is refused, and the file is unchanged', async () => {
    const file = at('plain-file');
    fs.writeFileSync(file, 'a file, not a folder\n');
    const r = await runCliAsync(['demo', '--dir', file]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'DEMO_WOULD_OVERWRITE');
    expect(fs.readFileSync(file, 'utf8')).toBe('a file, not a folder\n');
  });

  test('a second run into a DIR the demo made itself works, and a DIR with only unrelated files keeps them', async () => {
    const own = at('own');
    const first = await runCliAsync(['demo', '--dir', own, '--json']);
    expect(first.status, first.stderr).toBe(0);
    expect(fs.existsSync(path.join(own, '.sluice-demo'))).toBe(true);
    const second = await runCliAsync(['demo', '--dir', own, '--json']);
    expect(second.status, second.stderr).toBe(0);
    expect(parseJson(second, S.demoOutput).ok).toBe(true);

    const shared = at('shared');
    fs.mkdirSync(shared);
    fs.writeFileSync(path.join(shared, 'notes.txt'), 'mine\n');
    const beside = await runCliAsync(['demo', '--dir', shared, '--json']);
    expect(beside.status, beside.stderr).toBe(0);
    expect(fs.readFileSync(path.join(shared, 'notes.txt'), 'utf8')).toBe('mine\n');
  });
});
