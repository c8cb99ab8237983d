// sluice query refuses a statement that writes, drops or changes sluice's own tables, and runs the user's writes as before
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, expectOneLineError, scalar } from './support/cli.ts';

/*
 * `sluice query` ran any one statement, so `DROP TABLE _sluice_state` or
 * `DELETE FROM _sluice_journal` went through and left the capture broken (or
 * its record silently short). A statement that writes a `_sluice_` table
 * itself is refused before it runs; one whose DDL makes, drops or changes a
 * `_sluice_` object (an index on the journal, a captured table dropped or
 * renamed, which drops or rewrites its capture triggers) is rolled back.
 * Both exit 2 (QUERY_REFUSED) with the command that does it; nothing
 * changes. A write to a captured table still runs, and is journaled.
 */

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues']);
  const r = await runCliAsync(['sync', src, at('cache.db')]);
  expect(r.status, r.stderr).toBe(0);
});
afterAll(() => removeDir(dir));

const schemaOf = (file: string) =>
  scalar(
    file,
    "SELECT group_concat(type || ' ' || name || ' ' || coalesce(sql, ''), '\n') FROM (SELECT * FROM sqlite_schema ORDER BY name)",
  );

async function refused(file: string, sql: string, names: string): Promise<void> {
  const schema = schemaOf(file);
  const journal = scalar(src, 'SELECT count(*) || max(seq) FROM _sluice_journal');
  const r = await runCliAsync(['query', file, sql]);
  expect(r.status, r.stderr).toBe(2);
  expectOneLineError(r, 'QUERY_REFUSED');
  expect(r.stderr).toContain(names);
  expect(schemaOf(file)).toEqual(schema);
  expect(scalar(src, 'SELECT count(*) || max(seq) FROM _sluice_journal')).toEqual(journal);
}

describe("sluice query and sluice's own tables", () => {
  test('a write to a _sluice_ table is refused before it runs', async () => {
    await refused(src, 'DELETE FROM _sluice_journal', '_sluice_journal');
    await refused(src, "UPDATE _sluice_state SET source_id = 'x'", '_sluice_state');
    await refused(at('cache.db'), 'DELETE FROM _sluice_projections', '_sluice_projections');
  });
  test('DDL that makes, drops or changes a _sluice_ object is rolled back', async () => {
    await refused(src, 'DROP TABLE _sluice_state', '_sluice_state');
    await refused(src, 'CREATE INDEX ix_journal_ts ON _sluice_journal (ts)', 'ix_journal_ts');
    // A captured table dropped or renamed takes its capture triggers with it, or rewrites them: sluice alter is the way.
    await refused(src, 'DROP TABLE issues', 'sluice alter');
    await refused(src, 'ALTER TABLE issues RENAME TO tickets', 'sluice alter');
    // SQLite itself stops a DROP COLUMN of a column a capture trigger names (with the trigger's name): the same refusal.
    await refused(src, 'ALTER TABLE issues DROP COLUMN body', 'sluice alter');
  });
  test("the user's own writes still run, and are journaled", async () => {
    const before = Number(scalar(src, 'SELECT max(seq) FROM _sluice_journal'));
    const r = await runCliAsync([
      'query',
      src,
      "UPDATE issues SET title = 'renamed' WHERE number = (SELECT min(number) FROM issues)",
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    const changes = (JSON.parse(r.stdout) as { changes: number }).changes;
    expect(changes).toBeGreaterThan(0);
    expect(Number(scalar(src, 'SELECT max(seq) FROM _sluice_journal'))).toBe(before + changes);
    const made = await runCliAsync(['query', src, 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)']);
    expect(made.status, made.stderr).toBe(0);
  });
});
