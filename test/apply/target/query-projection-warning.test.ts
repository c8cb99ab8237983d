// query warns when its statement writes a projections table and not when it writes a users own table
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe, ROOT } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { loadDefinitions } from '../../../src/projection/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, write } from '../../cli/support/cli.ts';

/*
 * `sluice query TGT "<sql>"` on a target: a statement that writes a table
 * of a projection (a mirror's, a map's, an fts5 index or its key table, a
 * custom handler's declared table) runs, as any write does, but says on
 * stderr (and in --json, `warnings`) which projection it changes and what
 * that means: the projection no longer equals its source, and sluice
 * suspends it when it sees the edit (TARGET_EDITED), also when the write is
 * made by a trigger of the user's that the statement fires. Reads, and
 * writes to a user's own table, say nothing.
 */

let dir: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  const src = trackerSource(at('app.db'), ['issues']);
  tgt = at('cache.db');
  const projections = [
    ...(await loadDefinitions(path.join(ROOT, 'projections', 'issues-mirror.json'))),
    ...(await loadDefinitions(path.join(ROOT, 'projections', 'issues-search.json'))),
  ];
  await sync(src, tgt, { projections });
  write(tgt, 'CREATE TABLE mine (id INTEGER PRIMARY KEY, note TEXT)');
});
afterAll(() => removeDir(dir));

describe('query on a target', () => {
  test.each([
    ['an UPDATE of a mirror', "UPDATE issues SET title = 'x' WHERE repo_id = 1 AND number = 1", 'issues', 'issues'],
    ['a DELETE from an fts5 key table', 'DELETE FROM issues_search_src WHERE rowid = 1', 'issues_search', 'issues_search_src'],
    [
      'an INSERT into an fts5 index',
      "INSERT INTO issues_search (rowid, title, body) VALUES (99999, 'a', 'b')",
      'issues_search',
      'issues_search',
    ],
  ])('%s warns on stderr and in --json, and still runs', async (_what, sql, projection, table) => {
    const r = await runCliAsync(['query', tgt, sql, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const q = parseJson(r, S.queryOutput);
    expect(q.changes).toBe(1);
    expect(q.warnings).toEqual([expect.objectContaining({ code: 'WRITES_PROJECTION', projection, table })]);
    expect(r.stderr).toMatch(new RegExp(`^sluice: warning: WRITES_PROJECTION: .*${table}.*${projection}.*TARGET_EDITED`));
  });

  test("a write to a user's own table and a read of a projection say nothing", async () => {
    for (const sql of ["INSERT INTO mine (note) VALUES ('hello')", 'SELECT count(*) FROM issues']) {
      const r = await runCliAsync(['query', tgt, sql, '--json']);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      expect(parseJson(r, S.queryOutput).warnings).toBeUndefined();
    }
  });

  test("a write to a user's table whose own trigger writes a projection's table warns too", async () => {
    // EXPLAIN lists the programs of the triggers a statement fires after its own: the trigger's write is named.
    write(
      tgt,
      'CREATE TABLE mine_log (note TEXT); CREATE TRIGGER mine_log_copy AFTER INSERT ON mine_log BEGIN UPDATE issues SET title = NEW.note WHERE repo_id = 1 AND number = 2; END',
    );
    const r = await runCliAsync(['query', tgt, "INSERT INTO mine_log VALUES ('from a trigger')", '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.queryOutput).warnings).toEqual([
      expect.objectContaining({ code: 'WRITES_PROJECTION', projection: 'issues', table: 'issues' }),
    ]);
  });

  test('a DELETE with no WHERE (a table emptied whole, no b-tree opened for writing) warns too', async () => {
    const r = await runCliAsync(['query', tgt, 'DELETE FROM issues', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.queryOutput).warnings).toEqual([
      expect.objectContaining({ code: 'WRITES_PROJECTION', projection: 'issues', table: 'issues' }),
    ]);
  });
});
