// health of a mirror whose table was made again by hand without its primary key needs action, and the reinit it names gives the key back
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { health } from '../../../src/index.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, syncByLibrary, scalar } from '../../cli/support/cli.ts';

/*
 * "Copy the table" by hand (CREATE TABLE t2 AS SELECT * FROM t, DROP, RENAME)
 * keeps a mirror's column names and rows but not its PRIMARY KEY, by which
 * sync replaces rows (INSERT OR REPLACE): the next update of a key added a
 * second row for it. health compared the column names only and said ok.
 * It now needs action for a table with no PRIMARY KEY or UNIQUE index on
 * the projection's key, with the rebuild as repair; a UNIQUE index on the
 * key (a key SQLite replaces by just the same) is enough.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

describe('health of a mirror table made again without its key', () => {
  test('needs action naming the key and reinit; reinit makes the table with its key again', async () => {
    const src = trackerSource(at('app.db'), ['issues', 'comments']);
    const tgt = at('cache.db');
    expect(await syncByLibrary(src, tgt)).toBe(0);
    runSqliteCli(tgt, 'CREATE TABLE c2 AS SELECT * FROM comments; DROP TABLE comments; ALTER TABLE c2 RENAME TO comments;');

    const h = health(tgt);
    expect(h.ok).toBe(false);
    const comments = h.projections.find((p) => p.name === 'comments');
    expect(comments?.action).toMatch(/^table comments of projection comments has no PRIMARY KEY or UNIQUE index on its key \(id\)/);
    expect(comments?.action).toContain(`sluice reinit ${src} ${tgt} comments`);
    expect(h.projections.find((p) => p.name === 'issues')?.needsAction).toBe(false);

    // A UNIQUE index on the key is a key sync's writes replace by.
    runSqliteCli(tgt, 'CREATE UNIQUE INDEX comments_id ON comments (id)');
    expect(health(tgt).ok).toBe(true);
    runSqliteCli(tgt, 'DROP INDEX comments_id');
    expect(health(tgt).ok).toBe(false);

    const r = await runCliAsync(['reinit', src, tgt, 'comments']);
    expect(r.status, r.stderr).toBe(0);
    expect(scalar(tgt, "SELECT count(*) FROM pragma_table_info('comments') WHERE pk > 0")).toBe(1n);
    expect(health(tgt).ok).toBe(true);
  });
});
