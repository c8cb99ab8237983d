// a protected target refuses hand edits of its projections and sync keeps applying across a rebuild
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe, ROOT, PYTHON, runSqliteCli } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  write,
  dumpTables,
  scalar,
  syncByLibrary,
} from '../../cli/support/cli.ts';

/*
 * `sluice protect TGT` (opt-in) guards the tables of a target's projections
 * with triggers that fail a write made outside sluice: the sqlite3 shell
 * and Python cannot change a mirror, a map, an fts5 index's key table or a
 * custom handler's declared table, while sync keeps applying (its own
 * connection may write them), also after it rebuilt a table, and a user's
 * own table in the target stays writable. An fts5 index itself (a virtual
 * table) cannot carry triggers: protect says so. `--off` takes it away.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);
const DEFS = ['issues-mirror.json', 'open-issues.json', 'issues-search.json', 'comment-counts.ts'].flatMap((d) => [
  '--projection',
  path.join(ROOT, 'projections', d),
]);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'comments']);
  tgt = at('cache.db');
  expect(
    await syncByLibrary(
      src,
      tgt,
      DEFS.filter((a) => a !== '--projection'),
    ),
  ).toBe(0);
});
afterAll(() => removeDir(dir));

function shell(sql: string): { status: number | null; stderr: string } {
  const r = spawnSync('sqlite3', [tgt], { input: sql, encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

function python(sql: string): { status: number | null; stderr: string } {
  const r = spawnSync(
    PYTHON,
    ['-c', 'import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1])\ncon.execute(sys.argv[2])\ncon.commit()', tgt, sql],
    {
      encoding: 'utf8',
    },
  );
  return { status: r.status, stderr: r.stderr };
}

const EDITS = [
  "UPDATE issues SET title = 'hacked' WHERE repo_id = 1 AND number = 1;",
  'DELETE FROM open_issues WHERE rowid = (SELECT min(rowid) FROM open_issues);',
  "UPDATE issues_search_src SET title = 'hacked' WHERE rowid = (SELECT min(rowid) FROM issues_search_src);",
  'UPDATE comment_counts SET comments = comments + 1;',
];

describe('sluice protect', () => {
  test('refuses hand edits of every guarded table, lets sync apply and rebuild, and --off lets edits through again', async () => {
    const p = await runCliAsync(['protect', tgt, '--json']);
    expect(p.status, p.stderr).toBe(0);
    const out = parseJson(p, S.protectOutput);
    expect(out.protected).toBe(true);
    expect(out.tables.map((t) => `${t.projection}:${t.table}`).sort()).toEqual([
      'comment_counts:comment_counts',
      'issues:issues',
      'issues_search:issues_search_src',
      'open_issues:open_issues',
    ]);
    expect(out.unguarded).toEqual([
      expect.objectContaining({ projection: 'issues_search', table: 'issues_search', why: expect.stringMatching(/virtual table/) }),
    ]);

    const before = dumpTables(tgt);
    for (const sql of EDITS) {
      const bySh = shell(sql);
      expect(bySh.status, sql).not.toBe(0);
      expect(bySh.stderr, sql).toContain('no such function: sluice_protect');
      const byPy = python(sql);
      expect(byPy.status, sql).not.toBe(0);
      expect(byPy.stderr, sql).toContain('no such function: sluice_protect');
    }
    expect(dumpTables(tgt)).toEqual(before);
    // A user's own table in the target is not guarded.
    runSqliteCli(tgt, "CREATE TABLE mine (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO mine (v) VALUES ('ok');");
    expect(scalar(tgt, 'SELECT count(*) FROM mine')).toBe(1n);

    // sync writes through the guards, and a rebuild's new tables get them again.
    write(
      src,
      "UPDATE issues SET title = 'from the app', state = 'open' WHERE repo_id = 2 AND number <= 3; DELETE FROM comments WHERE id <= 5",
    );
    const s = await runCliAsync(['sync', src, tgt]);
    expect(s.status, s.stderr).toBe(0);
    const r = await runCliAsync(['reinit', src, tgt, 'issues']);
    expect(r.status, r.stderr).toBe(0);
    expect(shell(EDITS[0] as string).stderr).toContain('no such function: sluice_protect');
    const v = await runCliAsync(['verify', src, tgt, '--json']);
    expect(v.status, v.stdout).toBe(0);
    expect(parseJson(v, S.verifyOutput).ok).toBe(true);

    const off = await runCliAsync(['protect', tgt, '--off', '--json']);
    expect(off.status, off.stderr).toBe(0);
    expect(parseJson(off, S.protectOutput)).toEqual({ protected: false, tables: [], unguarded: [], wasUnguarded: [] });
    expect(shell(EDITS[0] as string)).toEqual({ status: 0, stderr: '' });
  });

  test('a file that is not a sluice target is refused with NOT_A_TARGET, exit 1', async () => {
    const r = await runCliAsync(['protect', src]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^sluice: NOT_A_TARGET: .*app\.db is not a sluice target/);
  });
});
