// sluice query on a protected target: a write to a projection's table is refused naming the protection, the table and the fix
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { runCliAsync, runCliOk, makeDir, removeDir, trackerSource, expectOneLineError, scalar } from './support/cli.ts';

/*
 * A protected target's guards call sluice_protect(), a function only
 * sluice's own connections define, so `sluice query` (another connection)
 * could not even compile a write to a projection's table: it said "BAD_SQL:
 * The query does not compile: no such function: sluice_protect. Pass exactly
 * one SQL statement." (it was one), naming neither the protection nor the
 * fix. DDL on such a table (DROP TABLE) was refused with a hint to run
 * `sluice alter` on the target, which refuses a target (it has no capture).
 * Now both say the target is protected, name the table and its projection,
 * and the fix: change the source and sync, or `sluice protect --off`; for
 * DDL, `sluice drop TARGET PROJECTION`. And `sluice alter` given a target
 * says TARGET_NOT_SOURCE naming the file it is synced from.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues']);
  tgt = at('cache.db');
  await runCliOk(['sync', src, tgt]);
  await runCliOk(['protect', tgt]);
});
afterAll(() => removeDir(dir));

const schemaOf = (file: string) =>
  scalar(
    file,
    "SELECT group_concat(type || ' ' || name || ' ' || coalesce(sql, ''), '\n') FROM (SELECT * FROM sqlite_schema ORDER BY name)",
  );
const rowsOf = (file: string) =>
  scalar(file, "SELECT group_concat(repo_id || '/' || number || ':' || title, '\n') FROM (SELECT * FROM issues ORDER BY repo_id, number)");

async function refused(sql: string, says: readonly string[], saysNot: readonly string[] = []): Promise<void> {
  const schema = schemaOf(tgt);
  const rows = rowsOf(tgt);
  const r = await runCliAsync(['query', tgt, sql]);
  expect(r.status, r.stderr).toBe(2);
  expectOneLineError(r, 'QUERY_REFUSED');
  for (const s of says) expect(r.stderr).toContain(s);
  for (const s of ['BAD_SQL', 'no such function', 'sluice alter', ...saysNot]) expect(r.stderr).not.toContain(s);
  expect(schemaOf(tgt)).toEqual(schema);
  expect(rowsOf(tgt)).toEqual(rows);
}

describe('sluice query on a protected target', () => {
  test('a write to a projection table says the target is protected, names the table and the fix', async () => {
    const fix = [`target ${tgt} is protected (sluice protect)`, 'table issues of projection issues', 'sync', `sluice protect ${tgt} --off`];
    await refused("UPDATE issues SET title = 'x' WHERE number = 1", fix);
    await refused('DELETE FROM issues', fix);
    await refused("INSERT INTO issues (repo_id, number, title, state, author, updated_at) VALUES (1, -1, 'x', 'open', 'me', '')", fix);
  });

  test("DDL on a projection table points to sluice drop, not to sluice alter (a source's)", async () => {
    await refused('DROP TABLE issues', [`sluice drop ${tgt} issues`]);
    await refused('ALTER TABLE issues RENAME TO tickets', [`sluice drop ${tgt} issues`]);
  });

  test('a read runs', async () => {
    const r = await runCliOk(['query', tgt, 'SELECT count(*) AS n FROM issues']);
    expect(r.stdout).toMatch(/"n":\d+/);
  });

  test('sluice alter given the target says TARGET_NOT_SOURCE, naming the file it is synced from', async () => {
    const r = await runCliAsync(['alter', tgt, 'DROP TABLE issues']);
    expect(r.status, r.stderr).not.toBe(0);
    expectOneLineError(r, 'TARGET_NOT_SOURCE');
    expect(r.stderr).toContain(src);
    expect(r.stderr).not.toContain('CAPTURE_ABSENT');
  });
});
