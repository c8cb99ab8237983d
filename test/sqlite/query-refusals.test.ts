// query refuses attach pragma transaction control and several statements writing nothing
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import {
  runCliAsync,
  mapLimit,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  sourceSeq,
  scalar,
  expectOneLineError,
} from '../cli/support/cli.ts';

/*
 * `query` runs one statement in a transaction of its own, under a row
 * budget, on the one file it is given. A statement that would step outside
 * that (reach another file, change a setting, end or open a transaction, or
 * run more than one statement) is refused before it runs: exit 2 (the SQL
 * argument is not one `query` accepts), one line naming what is refused,
 * why, and what to do instead, and the database is as it was.
 */

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues']);
});
afterAll(() => removeDir(dir));

const REFUSED: Record<string, { sql: string; names: string }> = {
  attach: { sql: `ATTACH '${path.join('other.db')}' AS other`, names: 'ATTACH' },
  detach: { sql: 'DETACH other', names: 'DETACH' },
  'pragma that sets': { sql: 'PRAGMA user_version = 7', names: 'PRAGMA' },
  'pragma that switches the journal mode': { sql: 'PRAGMA journal_mode = DELETE', names: 'PRAGMA' },
  'pragma that reads, after a comment, in lower case': { sql: '/* how many */ -- pages\n pragma page_count', names: 'PRAGMA' },
  begin: { sql: 'BEGIN IMMEDIATE', names: 'BEGIN' },
  commit: { sql: 'COMMIT', names: 'COMMIT' },
  end: { sql: 'END TRANSACTION', names: 'END' },
  rollback: { sql: 'ROLLBACK', names: 'ROLLBACK' },
  savepoint: { sql: 'SAVEPOINT s1', names: 'SAVEPOINT' },
  release: { sql: 'RELEASE s1', names: 'RELEASE' },
  vacuum: { sql: 'VACUUM', names: 'VACUUM' },
  'two writes': { sql: "UPDATE issues SET state = 'closed'; DELETE FROM issues", names: 'more than one statement' },
  'two reads': { sql: 'SELECT 1; SELECT 2', names: 'more than one statement' },
  'a write then a pragma': {
    sql: "INSERT INTO labels (repo_id, name, color) VALUES (1, 'x', X'00'); PRAGMA user_version = 3",
    names: 'more than one statement',
  },
};

describe('query refuses what it cannot run in one transaction of its own on one file', () => {
  test('each refused statement exits 2 with QUERY_REFUSED naming it, and nothing changes in the database or beside it', async () => {
    const tables = dumpTables(src);
    const seq = sourceSeq(src);
    const files = fs
      .readdirSync(dir)
      .filter((f) => !/-(wal|shm)$/.test(f))
      .sort();
    const results = await mapLimit(
      Object.entries(REFUSED),
      4,
      async ([name, c]) => [name, c, await runCliAsync(['query', src, c.sql, '--json'], { cwd: dir })] as const,
    );
    for (const [name, c, r] of results) {
      expect(r.status, `${name}: ${r.stderr}`).toBe(2);
      expectOneLineError(r, 'QUERY_REFUSED');
      expect(r.stderr, name).toContain(c.names);
      expect(r.stderr, name).toContain(src);
      expect(parseJson(r, S.errorOutput).error.code, name).toBe('QUERY_REFUSED');
    }
    expect(dumpTables(src)).toEqual(tables);
    expect(sourceSeq(src)).toBe(seq);
    expect(scalar(src, 'PRAGMA user_version')).toBe(0n);
    expect(scalar(src, 'PRAGMA journal_mode')).toBe('wal');
    expect(
      fs
        .readdirSync(dir)
        .filter((f) => !/-(wal|shm)$/.test(f))
        .sort(),
    ).toEqual(files); // no other.db
  });

  test('the messages say why and what to do instead: a pragma function, one statement per call, the sqlite3 shell', async () => {
    const [pragma, several, begin, attach] = await Promise.all(
      ['PRAGMA table_info(issues)', 'SELECT 1; SELECT 2', 'BEGIN', "ATTACH 'other.db' AS other"].map((sql) =>
        runCliAsync(['query', src, sql], { cwd: dir }),
      ),
    );
    expect(pragma?.stderr).toContain('SELECT * FROM pragma_table_info(');
    expect(several?.stderr).toContain('one statement per sluice query');
    expect(begin?.stderr).toContain('its own transaction');
    expect(attach?.stderr).toContain('sluice query on that file');
  });

  test('what stays allowed: a pragma function in a SELECT, and one statement followed by a comment', async () => {
    const [fn, trailing] = await Promise.all([
      runCliAsync(['query', src, "SELECT name FROM pragma_table_info('labels') ORDER BY cid", '--json']),
      runCliAsync(['query', src, 'SELECT count(*) FROM issues; -- all of them', '--json']),
    ]);
    expect(fn.status, fn.stderr).toBe(0);
    expect(parseJson(fn, S.queryOutput).rows).toEqual([['repo_id'], ['name'], ['color']]);
    expect(trailing.status, trailing.stderr).toBe(0);
    expect(parseJson(trailing, S.queryOutput).rows).toEqual([[200]]);
  });
});
