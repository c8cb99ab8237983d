// health of a protected target whose guard trigger another program dropped, or made again guarding nothing, needs action: hand edits go in again
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { health, protect } from '../../../src/index.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, syncByLibrary, scalar } from '../../cli/support/cli.ts';

/*
 * A schema tool dropped one of the triggers `sluice protect` put on a
 * mirror's table (it drops the triggers its model does not know). The
 * target still recorded that it was protected, yet the sqlite3 shell could
 * edit the table again, and health (and a sync with nothing to apply) said
 * nothing. health now names the table and the missing trigger, says hand
 * edits may have gone in, and names verify to find them and protect to
 * guard the table again; protect marks the table it guards again, and
 * health names verify until one compares it (protect-unguarded.test.ts). A guard trusted by
 * its name alone was no guard either: a table renamed away takes its
 * triggers with it (a table made again under the name has none), and a
 * trigger made again under a guard's name may refuse nothing. health holds
 * each guard to its table and to the SQL protect writes.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

describe('health of a protected target', () => {
  test('a guard trigger dropped by another program: health exits 3 naming it, verify and protect; protect again makes it ok', async () => {
    const src = trackerSource(at('app.db'), ['issues', 'comments']);
    const tgt = at('cache.db');
    expect(await syncByLibrary(src, tgt)).toBe(0);
    protect(tgt, true);
    expect(health(tgt).ok).toBe(true);
    const edit = "UPDATE issues SET title = 'by hand' WHERE repo_id = 1 AND number = 1";
    expect(() => runSqliteCli(tgt, edit)).toThrow(/sluice_protect/);

    const guard = String(
      scalar(
        tgt,
        "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '\\_sluice\\_protect\\_%\\_u' ESCAPE '\\' AND tbl_name = 'issues'",
      ),
    );
    runSqliteCli(tgt, `DROP TRIGGER "${guard}"; ${edit};`);

    const h = health(tgt);
    expect(h.ok).toBe(false);
    const issues = h.projections.find((p) => p.name === 'issues');
    expect(issues?.needsAction).toBe(true);
    expect(issues?.action).toContain(`table issues of projection issues is not guarded any more`);
    expect(issues?.action).toContain(`guard trigger ${guard} is missing`);
    expect(issues?.action).toContain(`sluice verify ${src} ${tgt}`);
    expect(issues?.action).toContain(`sluice protect ${tgt}`);
    expect(h.projections.find((p) => p.name === 'comments')?.needsAction).toBe(false);
    const r = await runCliAsync(['health', tgt]);
    expect(r.status, r.stdout).toBe(3);
    expect(r.stdout).toContain(guard);

    // The repairs it names: protect guards the table again, verify finds the edit that went in.
    // protect marks the table it found unguarded (exit 3): health names verify until one compares it.
    expect((await runCliAsync(['protect', tgt])).status).toBe(3);
    expect(health(tgt).projections.find((p) => p.name === 'issues')?.action).toContain('was unguarded since');
    expect(() => runSqliteCli(tgt, edit)).toThrow(/sluice_protect/);
    expect((await runCliAsync(['verify', src, tgt])).status).toBe(3);
    expect(health(tgt).projections.find((p) => p.name === 'issues')?.reason).toBe('TARGET_EDITED');
  });

  test('a guard that is there by name but guards nothing: its table renamed away (the guards follow it) and made again, or the guard made again with a body that refuses nothing', async () => {
    const src = trackerSource(at('app.db'), ['issues', 'comments']);
    const tgt = at('cache.db');
    expect(await syncByLibrary(src, tgt)).toBe(0);
    protect(tgt, true);
    const guardOf = (table: string, op: string) =>
      String(
        scalar(
          tgt,
          `SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '\\_sluice\\_protect\\_%\\_${op}' ESCAPE '\\' AND tbl_name = '${table}'`,
        ),
      );
    const issuesInsert = guardOf('issues', 'i');
    const commentsInsert = guardOf('comments', 'i');
    // (a) issues renamed away, with its guards, and made again by hand with its shape (its key too); (b) a guard of comments made again under its name, refusing nothing.
    const issuesSql = String(scalar(tgt, "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'issues'"));
    runSqliteCli(
      tgt,
      `ALTER TABLE issues RENAME TO issues_backup; ${issuesSql}; INSERT INTO issues SELECT * FROM issues_backup;
       DROP TRIGGER "${commentsInsert}"; CREATE TRIGGER "${commentsInsert}" BEFORE INSERT ON comments WHEN 0 BEGIN SELECT 1; END;`,
    );
    // Hand edits go in: the guards of issues guard issues_backup, the insert guard of comments refuses nothing.
    runSqliteCli(
      tgt,
      "UPDATE issues SET title = 'by hand'; INSERT INTO comments (repo_id, issue_number, author, body, created_at) SELECT repo_id, issue_number, 'hand', 'by hand', created_at FROM comments LIMIT 1;",
    );
    expect(scalar(tgt, "SELECT count(*) FROM comments WHERE author = 'hand'")).toBe(1n);
    expect(scalar(tgt, `SELECT tbl_name FROM sqlite_schema WHERE name = '${issuesInsert}'`)).toBe('issues_backup');

    const h = health(tgt);
    expect(h.ok).toBe(false);
    const issues = h.projections.find((p) => p.name === 'issues');
    expect(issues?.needsAction).toBe(true);
    expect(issues?.action).toContain('table issues of projection issues is not guarded any more');
    expect(issues?.action).toContain(`${issuesInsert}`);
    expect(issues?.action).toContain('on table issues_backup, not on issues');
    expect(issues?.action).toContain(`sluice protect ${tgt}`);
    const comments = h.projections.find((p) => p.name === 'comments');
    expect(comments?.needsAction).toBe(true);
    expect(comments?.action).toContain(`guard trigger ${commentsInsert} is not the one sluice protect made`);
    expect(comments?.action).not.toContain(guardOf('comments', 'u'));
    const r = await runCliAsync(['health', tgt]);
    expect(r.status, r.stdout).toBe(3);

    // The repair it names: protect guards the tables again (the impostor dropped, the guards made on issues).
    expect((await runCliAsync(['protect', tgt])).status).toBe(3);
    expect(health(tgt).ok).toBe(false);
    expect(() => runSqliteCli(tgt, "UPDATE issues SET title = 'by hand'")).toThrow(/sluice_protect/);
    expect(() =>
      runSqliteCli(
        tgt,
        "INSERT INTO comments (repo_id, issue_number, author, body, created_at) SELECT repo_id, issue_number, 'hand', 'again', created_at FROM comments LIMIT 1",
      ),
    ).toThrow(/sluice_protect/);
  });
});
