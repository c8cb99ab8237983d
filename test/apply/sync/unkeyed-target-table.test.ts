// sync suspends a mirror whose table, or an fts5 index whose key table, was made again by hand without its keys instead of writing rows the keys would have kept out
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { health } from '../../../src/index.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, syncByLibrary, scalar } from '../../cli/support/cli.ts';

/*
 * A mirror's table made again by hand (CREATE TABLE ... AS SELECT, then a
 * rename) has the same columns and rows but no PRIMARY KEY. sync's writes
 * replace a row by the key (INSERT OR REPLACE), so the next update of a
 * key added a second row for it, and sync exited 0. sync now suspends the
 * projection (TARGET_TABLE_CHANGED, exit 3) before it applies anything;
 * the rebuild health names (reinit) makes the table with its key, and the
 * update then lands once.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

describe('sync into a mirror table made again without its key', () => {
  test('suspends it with TARGET_TABLE_CHANGED and writes no second row; reinit, then the update lands once', async () => {
    const src = trackerSource(at('app.db'), ['comments']);
    const tgt = at('cache.db');
    expect(await syncByLibrary(src, tgt)).toBe(0);
    runSqliteCli(tgt, 'CREATE TABLE c2 AS SELECT * FROM comments; DROP TABLE comments; ALTER TABLE c2 RENAME TO comments;');
    runSqliteCli(src, "UPDATE comments SET body = 'changed' WHERE id = 1");
    const rows = () => scalar(tgt, 'SELECT count(*) FROM comments WHERE id = 1');

    const s = await runCliAsync(['sync', src, tgt]);
    expect(s.status, s.stdout + s.stderr).toBe(3);
    expect(s.stdout + s.stderr).toContain('TARGET_TABLE_CHANGED');
    expect(rows()).toBe(1n);
    expect(scalar(tgt, 'SELECT body FROM comments WHERE id = 1')).not.toBe('changed');
    const h = health(tgt);
    expect(h.projections[0]).toMatchObject({ name: 'comments', state: 'suspended', reason: 'TARGET_TABLE_CHANGED', needsAction: true });
    expect(h.projections[0]?.detail).toMatchObject({ table: 'comments', key: ['id'] });
    expect(h.projections[0]?.action).toContain(`sluice reinit ${src} ${tgt} comments`);
    // A second sync changes nothing either.
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(3);
    expect(rows()).toBe(1n);

    expect((await runCliAsync(['reinit', src, tgt, 'comments'])).status).toBe(0);
    runSqliteCli(src, "UPDATE comments SET body = 'again' WHERE id = 1");
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    expect(rows()).toBe(1n);
    expect(scalar(tgt, 'SELECT body FROM comments WHERE id = 1')).toBe('again');
    expect(health(tgt).ok).toBe(true);
  });
});

/*
 * An fts5 index's key table (<name>_src) made again the same way loses its
 * rowid (an INTEGER PRIMARY KEY, which the index reads its rows by) and the
 * UNIQUE on the key: health said ok, and sync applied with exit 0, writing a
 * row with a NULL rowid that the index cannot find (a search then read
 * "database disk image is malformed"). The same rule holds it now: health
 * needs action, sync suspends it before it applies anything.
 */
describe('sync into an fts5 index whose key table was made again without its keys', () => {
  test('health needs action and sync suspends it with TARGET_TABLE_CHANGED; reinit, then the new row is found', async () => {
    const src = trackerSource(at('app.db'), ['issues']);
    const tgt = at('cache.db');
    expect(await syncByLibrary(src, tgt, [path.resolve('projections/issues-search.json')])).toBe(0);
    runSqliteCli(
      tgt,
      'CREATE TABLE x AS SELECT * FROM issues_search_src; DROP TABLE issues_search_src; ALTER TABLE x RENAME TO issues_search_src;',
    );

    const before = health(tgt);
    expect(before.ok).toBe(false);
    const action = before.projections.find((p) => p.name === 'issues_search')?.action;
    expect(action).toMatch(/^table issues_search_src of projection issues_search has no PRIMARY KEY or UNIQUE index on /);
    expect(action).toContain(`sluice reinit ${src} ${tgt} issues_search`);

    runSqliteCli(src, "UPDATE issues SET title = 'zebrafish' WHERE repo_id = 1 AND number = 1");
    const s = await runCliAsync(['sync', src, tgt]);
    expect(s.status, s.stdout + s.stderr).toBe(3);
    expect(s.stdout + s.stderr).toContain('TARGET_TABLE_CHANGED');
    expect(scalar(tgt, 'SELECT count(*) FROM issues_search_src WHERE rowid IS NULL')).toBe(0n);
    const h = health(tgt);
    expect(h.projections.find((p) => p.name === 'issues_search')).toMatchObject({
      state: 'suspended',
      reason: 'TARGET_TABLE_CHANGED',
      needsAction: true,
    });

    expect((await runCliAsync(['reinit', src, tgt, 'issues_search'])).status).toBe(0);
    runSqliteCli(src, "UPDATE issues SET title = 'narwhal' WHERE repo_id = 1 AND number = 2");
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    expect(scalar(tgt, "SELECT count(*) FROM issues_search WHERE issues_search MATCH 'zebrafish OR narwhal'")).toBe(2n);
    expect(health(tgt).ok).toBe(true);

    // Its key kept by a UNIQUE index but its rowid a plain column: the index would read rows by a NULL rowid.
    runSqliteCli(
      tgt,
      `CREATE TABLE x (rowid INTEGER, _k0, _k1, title, body, UNIQUE (_k0, _k1)); INSERT INTO x SELECT * FROM issues_search_src;
       DROP TABLE issues_search_src; ALTER TABLE x RENAME TO issues_search_src;`,
    );
    expect(health(tgt).projections.find((p) => p.name === 'issues_search')?.action).toMatch(
      /^table issues_search_src of projection issues_search has no INTEGER PRIMARY KEY rowid, which the FTS5 index reads its rows by/,
    );
  });
});
