// a unique index made and dropped around a replace between two syncs never leaves a mirror active and stale
import path from 'node:path';
import { test, expect, runSqliteCli } from '../../../support/fixtures.ts';
import { enable } from '../../../../src/capture/index.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { pythonExec } from '../../../support/journal.ts';
import { tableCells } from '../../../apply/support/target.ts';

/*
 * The REPLACE guards know the UNIQUE indexes the table had when it was
 * armed; verifyCapture unarms a table that gains one (SCHEMA_CHANGED) or
 * one over an expression (UNIQUE_EXPRESSION_INDEX). A migration (the sqlite3
 * shell, recursive_triggers off) that makes an index, runs a REPLACE through
 * it and drops it between two syncs leaves nothing for verification to see:
 * the deleted row is never journaled and the mirror stays active with it.
 */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, u TEXT, v)';

for (const index of ['t (u)', 't (lower(u))']) {
  test(`CREATE UNIQUE INDEX ON ${index}, a REPLACE through it, DROP INDEX: the mirror is active only with the source's rows`, async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('source.db', SCHEMA);
    enable(db, ['t']);
    pythonExec(file, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2);");
    const target = path.join(tmp, 'target.db');
    await sync(file, target, { projections: [{ name: 't', source: 't', kind: 'mirror' }] });
    runSqliteCli(file, `CREATE UNIQUE INDEX tu ON ${index}; INSERT OR REPLACE INTO t VALUES (5, 'a', 5); DROP INDEX tu;`);
    const r = await sync(file, target);
    const tg = openDatabase(target);
    const rows = tableCells(tg, 'main', 't');
    tg.close();
    const source = tableCells(db, 'main', 't');
    expect(source).toHaveLength(2);
    expect({ state: r.projections[0]?.state, rows }).toEqual({ state: 'active', rows: source });
  });
}
