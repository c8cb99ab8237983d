// query runs one statement under a row budget and its writes go through capture
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { eventLineSchema } from '../../src/feed/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  sourceSeq,
  expectOneLineError,
} from '../cli/support/cli.ts';

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'comments']);
});
afterAll(() => removeDir(dir));

const CLOSE_REPO_2 = "UPDATE issues SET state = 'closed', title = title || ' [closed]' WHERE repo_id = 2 RETURNING repo_id, number";

describe('query', () => {
  test('an UPDATE ... RETURNING over --max-rows exits 1 and leaves no write: no row, no journal event', async () => {
    const before = dumpTables(src);
    const seq = sourceSeq(src);
    const r = await runCliAsync(['query', src, CLOSE_REPO_2, '--max-rows', '39', '--json']);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'ROW_BUDGET_EXCEEDED');
    expect(r.stderr).toContain('--max-rows 39');
    expect(parseJson(r, S.errorOutput).error.code).toBe('ROW_BUDGET_EXCEEDED');
    expect(dumpTables(src)).toEqual(before);
    expect(sourceSeq(src)).toBe(seq);
  });

  test('--max-rows bounds the rows returned, not the rows a write changes without RETURNING: such a write commits and reports its changes, as the help says', async () => {
    const help = await runCliAsync(['query', '--help']);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain(
      'It does not bound the rows a write changes without RETURNING (they are reported as changes)',
    );
    const seq = sourceSeq(src);
    const r = await runCliAsync([
      'query',
      src,
      "UPDATE comments SET body = body || ' (edited)' WHERE id <= 30",
      '--max-rows',
      '1',
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.queryOutput)).toEqual({ columns: [], rows: [], changes: 30 });
    expect(sourceSeq(src)).toBe(seq + 30);
  });

  test('the same statement within the budget commits, returns its rows, and each write is a captured event', async () => {
    const seq = sourceSeq(src);
    const r = await runCliAsync(['query', src, CLOSE_REPO_2, '--max-rows', '40', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const q = parseJson(r, S.queryOutput);
    expect(q.columns).toEqual(['repo_id', 'number']);
    expect(q.rows.map((row) => row[1]).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(q.changes).toBe(40);
    expect(sourceSeq(src)).toBe(seq + 40);

    const changes = await runCliAsync(['changes', src, '--limit', '1000']);
    expect(changes.status, changes.stderr).toBe(0);
    const events = changes.stdout
      .trimEnd()
      .split('\n')
      .slice(0, -1)
      .map((l) => eventLineSchema.parse(JSON.parse(l)))
      .filter((e) => e.seq > seq);
    expect(events).toHaveLength(40);
    for (const e of events) {
      expect(e).toMatchObject({ table: 'issues', op: 'update', image: 'full' });
      expect(e.key[0]).toBe(2);
      expect(e.after?.state).toBe('closed');
      expect(String(e.after?.title)).toMatch(/ \[closed\]$/);
    }
  });

  test('a plain SELECT and a WITH ... INSERT work, and a read never writes', async () => {
    const seq = sourceSeq(src);
    const read = await runCliAsync([
      'query',
      src,
      "SELECT count(*) AS n, sum(state = 'closed' AND repo_id = 2) AS closed FROM issues",
      '--json',
    ]);
    expect(read.status, read.stderr).toBe(0);
    expect(parseJson(read, S.queryOutput)).toEqual({ columns: ['n', 'closed'], rows: [[200, 40]], changes: 0 });
    expect(sourceSeq(src)).toBe(seq);

    const insert = await runCliAsync([
      'query',
      src,
      "WITH n(i) AS (VALUES (1), (2), (3)) INSERT INTO comments (repo_id, issue_number, author, body, created_at) SELECT 1, 1, 'cte', 'comment ' || i, '2026-07-01' FROM n",
      '--json',
    ]);
    expect(insert.status, insert.stderr).toBe(0);
    expect(parseJson(insert, S.queryOutput)).toEqual({ columns: [], rows: [], changes: 3 });
    expect(sourceSeq(src)).toBe(seq + 3);

    // A SELECT over its budget is an error too, though it wrote nothing.
    const big = await runCliAsync(['query', src, 'SELECT * FROM comments', '--max-rows', '10']);
    expect(big.status, big.stderr).toBe(1);
    expectOneLineError(big, 'ROW_BUDGET_EXCEEDED');
  });

  test('a read-only statement that returns no data (REINDEX of a table with no index) runs and reports 0 changes, not an INTERNAL driver error', async () => {
    const make = await runCliAsync(['query', src, 'CREATE TABLE plain (x)']);
    expect(make.status, make.stderr).toBe(0);
    const before = dumpTables(src);
    const seq = sourceSeq(src);
    const r = await runCliAsync(['query', src, 'REINDEX plain', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.queryOutput)).toEqual({ columns: [], rows: [], changes: 0 });
    const text = await runCliAsync(['query', src, 'REINDEX plain']);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout.trim()).toBe('0 row(s) changed');
    expect(dumpTables(src)).toEqual(before);
    expect(sourceSeq(src)).toBe(seq);
  });
});
