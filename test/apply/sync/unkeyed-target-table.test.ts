// sync suspends a mirror whose table was made again by hand without its primary key instead of adding a second row for a key
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
