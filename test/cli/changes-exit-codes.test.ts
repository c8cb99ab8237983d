// changes exits 3 for a cursor that must rebuild and 1 for a malformed one
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { cursorLineSchema } from '../../src/feed/index.ts';
import { runCliAsync, mapLimit, makeDir, removeDir, trackerSource, write, expectOneLineError, parseJson, scalar } from './support/cli.ts';

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

describe('changes --since after an older copy of the source was restored in place', () => {
  // One commit per event, from another program, until the journal's newest seq is `until`.
  const WRITER = `import sqlite3, sys
db, tag, until, lo = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = sqlite3.connect(db); i = 0
while (c.execute('select max(seq) from _sluice_journal').fetchone()[0] or 0) < until:
    c.execute('update t set v = ? where id = ?', (f'{tag}{i}', lo + i % 50)); c.commit(); i += 1
`;
  const writeUntil = (file: string, tag: string, until: number, lo: number) => runPython(WRITER, [file, tag, String(until), String(lo)]);

  test("and written until the pruned horizon is the cursor's seq exits 3 with CURSOR_PRUNED, not 0 with the new history skipped", async () => {
    const d = makeDir();
    try {
      const file = path.join(d, 'src.db');
      runPython(
        `import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute('create table t (id integer primary key, v text)')
c.executemany('insert into t values (?, ?)', [(i, 'init') for i in range(1, 201)]); c.commit()`,
        [file],
      );
      const en = await runCliAsync(['enable', file, 't', '--retention', '1024']);
      expect(en.status, en.stderr).toBe(0);
      writeUntil(file, 'a', 100, 1);
      runPython('import sqlite3, sys\nsqlite3.connect(sys.argv[1]).execute("pragma wal_checkpoint(truncate)")', [file]);
      const backup = fs.readFileSync(file);
      writeUntil(file, 'b', 112, 1);
      const read = await runCliAsync(['changes', file, '--limit', '5000']);
      expect(read.status, read.stderr).toBe(0);
      const cursor = cursorLineSchema.parse(JSON.parse(read.stdout.trimEnd().split('\n').at(-1) as string)).cursor;
      // Restored in place (the same inode), then written by the application: rows 101..150 change, seq 101..1136.
      for (const suffix of ['-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
      fs.writeFileSync(file, backup);
      writeUntil(file, 'c', 1136, 101);
      expect(scalar(file, 'SELECT pruned_through FROM _sluice_state')).toBe(112n);

      const r = await runCliAsync(['changes', file, '--since', cursor, '--limit', '5000']);
      expect(r.status, r.stderr).toBe(3);
      expectOneLineError(r, 'CURSOR_PRUNED');
      expect(r.stderr).toContain('seq 112');
      expect(r.stdout).toBe('');
      // Starting over reads the retained journal of the history the file holds now.
      const over = await runCliAsync(['changes', file, '--limit', '5000']);
      expect(over.status, over.stderr).toBe(0);
      expect(over.stdout).toContain('"c1023"');
    } finally {
      removeDir(d);
    }
  });
});
