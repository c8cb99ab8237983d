// a projection table dropped by hand: verify and sync say what health says (TARGET_TABLE_CHANGED, with its repair), not SQLite's "no such table"
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { cli, makeSource } from '../support/target.ts';

/*
 * health saw a projection's table dropped by hand and named it with its
 * repair (TARGET_TABLE_CHANGED), but verify failed with a bare
 * "SQLITE_ERROR: no such table: tgt.m", exit 1, and so did the first sync
 * with an event to apply. Both now report what health reports.
 */

describe('a projection table dropped in the target', () => {
  test('verify exits 3 naming it, sync fails the projection with TARGET_TABLE_CHANGED, and reinit repairs it', async ({ tmp, makeDb }) => {
    const src = makeSource(makeDb, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1, 'a');", ['items']);
    const tgt = path.join(tmp, 'cache.db');
    const def = path.join(tmp, 'm.json');
    fs.writeFileSync(def, JSON.stringify({ name: 'm', source: 'items', kind: 'map', columns: { id: 'id', nm: 'name' } }));
    expect(cli(['sync', src.file, tgt, '--projection', def]).status).toBe(0);
    const t = openDatabase(tgt);
    t.exec('DROP TABLE m');
    t.close();
    const v = cli(['verify', src.file, tgt]);
    expect(v.status, v.stderr).toBe(3);
    expect(v.stdout + v.stderr).toMatch(/TARGET_TABLE_CHANGED: not compared: table m of projection m is missing from the target/);
    expect(v.stdout + v.stderr).not.toMatch(/SQLITE_ERROR/);
    src.db.exec("UPDATE items SET name = 'b' WHERE id = 1");
    const s = cli(['sync', src.file, tgt]);
    expect(s.status).toBe(1);
    expect(s.stderr).toMatch(
      /^sluice: TARGET_TABLE_CHANGED: projection m: table m of projection m is missing from the target .*sluice reinit/m,
    );
    expect(s.stderr).not.toMatch(/SQLITE_ERROR/);
    const r = cli(['reinit', src.file, tgt, 'm']);
    expect(r.status, r.stderr).toBe(0);
    expect(cli(['verify', src.file, tgt]).status).toBe(0);
  });
});
