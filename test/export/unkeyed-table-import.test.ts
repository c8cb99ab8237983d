// import (and subscribe, through the same batch path) suspends a mirror whose table was made again without its key, as sync does
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { health } from '../../src/index.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, scalar } from '../cli/support/cli.ts';

/*
 * sync suspends a mirror whose table was made again by hand without its
 * PRIMARY KEY (CREATE TABLE ... AS SELECT) with TARGET_TABLE_CHANGED before
 * it applies a batch. import applied the same batch with exit 0, left the
 * projection active and added a second row for the updated key (its
 * INSERT OR REPLACE had no key to replace by). import, and subscribe, which
 * applies through the same importer, now run the same check in the one
 * batch path and suspend it the same way, writing nothing; a new export
 * file (it starts with a snapshot) makes the table again with its key.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

describe('import into a mirror table made again without its key', () => {
  test('suspends it with TARGET_TABLE_CHANGED and writes no second row', async () => {
    const src = trackerSource(at('app.db'), ['comments']);
    const tgt = at('cache.db');
    const file = at('changes.jsonl');
    expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
    expect((await runCliAsync(['import', tgt, file])).status).toBe(0);
    runSqliteCli(tgt, 'CREATE TABLE c2 AS SELECT * FROM comments; DROP TABLE comments; ALTER TABLE c2 RENAME TO comments;');
    runSqliteCli(src, "UPDATE comments SET body = 'changed' WHERE id = 1");
    expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
    const rows = () => scalar(tgt, 'SELECT count(*) FROM comments WHERE id = 1');

    const r = await runCliAsync(['import', tgt, file]);
    expect(r.status, r.stdout + r.stderr).toBe(3);
    expect(r.stderr).toContain('TARGET_TABLE_CHANGED');
    expect(r.stderr).toContain('table comments of projection comments has no PRIMARY KEY or UNIQUE index on its key (id)');
    expect(rows()).toBe(1n);
    expect(scalar(tgt, 'SELECT body FROM comments WHERE id = 1')).not.toBe('changed');
    const h = health(tgt);
    expect(h.projections[0]).toMatchObject({ name: 'comments', state: 'suspended', reason: 'TARGET_TABLE_CHANGED', needsAction: true });
    expect(h.projections[0]?.detail).toMatchObject({ table: 'comments', key: ['id'] });
    expect(r.stderr).toContain('Rebuild it from a snapshot: import a new export file');
    // Importing the file again changes nothing either.
    expect((await runCliAsync(['import', tgt, file])).status).toBe(3);
    expect(rows()).toBe(1n);

    // The repair it names: a new export file starts with a snapshot, which makes the table again with its key.
    const fresh = at('fresh.jsonl');
    expect((await runCliAsync(['export', src, '--out', fresh])).status).toBe(0);
    const again = await runCliAsync(['import', tgt, fresh]);
    expect(again.status, again.stdout + again.stderr).toBe(0);
    expect(rows()).toBe(1n);
    expect(scalar(tgt, 'SELECT body FROM comments WHERE id = 1')).toBe('changed');
    expect(health(tgt).ok).toBe(true);
  });
});
