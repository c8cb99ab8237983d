// a shadow that differs from the source in any row key value or storage class fails its validation
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { shadowMatchesSource } from '../../../src/apply/check/index.ts';
import { openApplySession, TARGET_SCHEMA, readProjection } from '../../../src/apply/target/index.ts';
import { readSourceView } from '../../../src/feed/index.ts';
import { pythonExec } from '../../support/journal.ts';

/*
 * The validation of a protected rebuild (reference 003, step 4) compares
 * the whole shadow with the source at one seq: every row, every key and
 * every value, by storage class and bytes. Here a shadow is a copy of the
 * mirror's table, tampered one way at a time: each must fail, and the
 * untampered copy must pass.
 */

const SCHEMA = `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE, x, r REAL, n NUMERIC);
INSERT INTO t VALUES (1, 'a', 1, 1.5, 2), (2, 'b', '1', 2.5, 3), (3, 'c', 0.0, 0.0, 4), (4, 'd', x'61', 1.0, 5), (5, 'e', NULL, NULL, NULL);`;

const TAMPERINGS: Record<string, string> = {
  'a changed text value': "UPDATE s SET name = 'z' WHERE id = 1",
  'a text value in another case (the column is NOCASE)': "UPDATE s SET name = 'A' WHERE id = 1",
  'an integer stored as a real': 'UPDATE s SET x = 1.0 WHERE id = 1',
  'a text stored as an integer': 'UPDATE s SET x = 1 WHERE id = 2',
  'a blob stored as text': "UPDATE s SET x = 'a' WHERE id = 4",
  '0.0 stored as -0.0 (a column without affinity)': 'UPDATE s SET x = -0.0 WHERE id = 3',
  'a changed real': 'UPDATE s SET r = 1.25 WHERE id = 1',
  'a NULL where the source has a value': 'UPDATE s SET n = NULL WHERE id = 1',
  'a value where the source has NULL': 'UPDATE s SET x = 0 WHERE id = 5',
  'a missing row': 'DELETE FROM s WHERE id = 2',
  'an extra row': "INSERT INTO s VALUES (9, 'i', NULL, NULL, NULL)",
  'a row under another key': 'UPDATE s SET id = 8 WHERE id = 5',
};

test('a shadow that differs from the source in any row, key, value or storage class fails its validation, and an exact copy passes', async ({
  makeDb,
  tmp,
}) => {
  const { db: app, file } = makeDb('app.db', SCHEMA);
  enable(app, ['t']);
  const target = path.join(tmp, 'cache.db');
  await sync(file, target);
  const session = openApplySession(file, target);
  const { db } = session;
  try {
    const rec = readProjection(db, TARGET_SCHEMA, 't');
    if (rec === undefined) throw new Error('no projection t');
    const table = db.prepare(`SELECT sql FROM ${TARGET_SCHEMA}.sqlite_master WHERE name = 't'`).pluck().get() as string;
    db.exec(
      `${table.replace(/^CREATE TABLE "?t"?/, `CREATE TABLE ${TARGET_SCHEMA}.s`)}; INSERT INTO ${TARGET_SCHEMA}.s SELECT * FROM ${TARGET_SCHEMA}.t`,
    );
    const matches = () => {
      const view = readSourceView(db);
      const tid = view.tables.get('t')?.table.tid as number;
      const shadow = { table: 's', definition: rec.definition, shape: rec.sourceShape, fingerprint: rec.fingerprint, seq: view.hw };
      return shadowMatchesSource(db, rec, shadow, view.hw, tid);
    };
    expect(matches()).toMatchObject({ ok: true, checked: 5, diffs: [] });
    for (const [what, sql] of Object.entries(TAMPERINGS)) {
      db.exec('SAVEPOINT tamper');
      db.exec(sql.replace(' s ', ` ${TARGET_SCHEMA}.s `));
      expect({ what, ok: matches().ok }).toEqual({ what, ok: false });
      db.exec('ROLLBACK TO tamper; RELEASE tamper');
    }
    expect(matches().ok).toBe(true);
    // A shadow table that declares n TEXT stores the source's numbers as text: not the source's values
    // (compared with their affinities, '2' would be taken for the NUMERIC column's 2).
    db.exec(
      `DROP TABLE ${TARGET_SCHEMA}.s; ${table.replace(/^CREATE TABLE "?t"?/, `CREATE TABLE ${TARGET_SCHEMA}.s`).replace('"n" NUMERIC', '"n" TEXT')}`,
    );
    db.exec(`INSERT INTO ${TARGET_SCHEMA}.s SELECT * FROM ${TARGET_SCHEMA}.t`);
    expect(db.prepare(`SELECT typeof(n) FROM ${TARGET_SCHEMA}.s WHERE id = 1`).pluck().get()).toBe('text');
    expect(matches().ok).toBe(false);
  } finally {
    session.close();
  }
});

test('a shadow validated at an older seq leaves out the keys the source changed after it, and no other', async ({ makeDb, tmp }) => {
  const { db: app, file } = makeDb('app.db', SCHEMA);
  enable(app, ['t']);
  const target = path.join(tmp, 'cache.db');
  await sync(file, target);
  const session = openApplySession(file, target);
  const { db } = session;
  try {
    const rec = readProjection(db, TARGET_SCHEMA, 't');
    if (rec === undefined) throw new Error('no projection t');
    const table = db.prepare(`SELECT sql FROM ${TARGET_SCHEMA}.sqlite_master WHERE name = 't'`).pluck().get() as string;
    db.exec(
      `${table.replace(/^CREATE TABLE "?t"?/, `CREATE TABLE ${TARGET_SCHEMA}.s`)}; INSERT INTO ${TARGET_SCHEMA}.s SELECT * FROM ${TARGET_SCHEMA}.t`,
    );
    const seq = readSourceView(db).hw;
    // After the shadow's seq, the source changes key 1 and deletes key 2: the swap reads them again.
    pythonExec(file, "UPDATE t SET name = 'new' WHERE id = 1; DELETE FROM t WHERE id = 2");
    const matches = () => {
      const view = readSourceView(db);
      const tid = view.tables.get('t')?.table.tid as number;
      const shadow = { table: 's', definition: rec.definition, shape: rec.sourceShape, fingerprint: rec.fingerprint, seq };
      return shadowMatchesSource(db, rec, shadow, view.hw, tid);
    };
    expect(matches()).toMatchObject({ ok: true, inFlight: 2 });
    // A key the journal did not touch since is still compared.
    db.exec(`UPDATE ${TARGET_SCHEMA}.s SET name = 'z' WHERE id = 3`);
    expect(matches()).toMatchObject({ ok: false, diffs: [{ key: [3], kind: 'different' }] });
  } finally {
    session.close();
  }
});
