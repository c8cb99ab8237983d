import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { enable, status, verifyCapture, openSource, rearmCapture } from '../../src/capture/index.ts';
import { journalEvents, cell } from '../support/journal.ts';
import type { Db } from '../../src/sqlite/index.ts';

/* What happens to capture when the source schema changes under it, and how it is repaired. */

// The database file and its WAL, hashed. (-shm is shared memory that readers
// write read marks into, and opening read-only creates an empty -wal: neither is a write.)
const filesOf = (file: string) =>
  Object.fromEntries(
    [file, `${file}-wal`].map((f) => [
      f.slice(file.length) || 'db',
      fs.existsSync(f) ? createHash('sha256').update(fs.readFileSync(f)).digest('hex') : null,
    ]),
  );
const totalChanges = (db: Db) => (db.prepare('SELECT total_changes() AS n').get() as { n: bigint }).n;

describe('schema drift', () => {
  test('ALTER TABLE ADD COLUMN makes status report SCHEMA_CHANGED; re-arming (what sync does at its open) says so, advances the generation, and the new column is captured', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('s.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    const first = enable(db, ['t']);
    db.exec("INSERT INTO t VALUES (1, 'a')");
    runSqliteCli(file, 'ALTER TABLE t ADD COLUMN w;'); // an external migration
    const s = status(db);
    expect(s.tables[0]).toMatchObject({ name: 't', armed: false, reason: 'SCHEMA_CHANGED' });
    expect(s.tables[0]?.detail).toContain('t');
    db.close();

    const reopened = openSource(file);
    try {
      expect(rearmCapture(reopened)).toMatchObject({
        fromGeneration: first.generation,
        generation: first.generation + 1,
        tables: [{ table: 't', reason: 'SCHEMA_CHANGED' }],
      });
      const after = status(reopened);
      expect(after.generation).toBe(first.generation + 1);
      expect(after.sourceId).toBe(first.sourceId);
      expect(after.tables[0]).toMatchObject({ name: 't', armed: true });
      expect(after.lastReason).toContain('re-armed t');
      reopened.exec("UPDATE t SET w = x'01' WHERE id = 1");
      expect(journalEvents(reopened).at(-1)).toMatchObject({
        op: 'update',
        before: [cell.int(1), cell.text('a'), cell.null()],
        after: [cell.int(1), cell.text('a'), cell.blob(Buffer.from([1]))],
      });
    } finally {
      reopened.close();
    }
  });

  test('opening a source, even writable, re-arms nothing; re-arming restores a dropped trigger and says TRIGGER_MISSING', ({ makeDb }) => {
    const { db, file } = makeDb('s.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    const first = enable(db, ['t']);
    db.exec('DROP TRIGGER _sluice_t1_del');
    db.close();
    const ro = openSource(file, { readonly: true });
    expect(status(ro).tables[0]).toMatchObject({ armed: false, reason: 'TRIGGER_MISSING' });
    ro.close();
    const rw = openSource(file);
    expect(status(rw)).toMatchObject({ generation: first.generation, tables: [{ armed: false, reason: 'TRIGGER_MISSING' }] });
    expect(rearmCapture(rw)?.tables).toEqual([{ table: 't', reason: 'TRIGGER_MISSING', detail: 'trigger _sluice_t1_del is missing' }]);
    expect(status(rw)).toMatchObject({ generation: first.generation + 1, tables: [{ armed: true }] });
    expect(rearmCapture(rw)).toBeUndefined();
    rw.exec("INSERT INTO t VALUES (1, 'a'); DELETE FROM t;");
    expect(journalEvents(rw).map((e) => e.op)).toEqual(['insert', 'delete']);
    rw.close();
  });

  test('an altered trigger body is reported as TRIGGER_ALTERED', ({ makeDb }) => {
    const { db } = makeDb('s.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(db, ['t']);
    const sql = (db.prepare("SELECT sql FROM sqlite_schema WHERE name = '_sluice_t1_upd'").get() as { sql: string }).sql;
    db.exec(`DROP TRIGGER _sluice_t1_upd; ${sql.replace('OR typeof', 'AND typeof')}`);
    expect(verifyCapture(db).tables[0]).toMatchObject({ armed: false, reason: 'TRIGGER_ALTERED' });
  });

  test('status is read-only: the database file is unchanged after status on a read-only connection, and a writable one records no change', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('s.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v); CREATE TABLE u (id INTEGER PRIMARY KEY);');
    enable(db, ['t', 'u']);
    db.exec("INSERT INTO t VALUES (1, 'a'); DROP TRIGGER _sluice_t2_ins;"); // u is unarmed: status must not repair it
    const changes = totalChanges(db);
    const walBefore = filesOf(file);
    expect(status(db).tables[1]).toMatchObject({ name: 'u', armed: false });
    expect(totalChanges(db)).toBe(changes);
    expect(filesOf(file)).toEqual(walBefore);
    db.close(); // checkpoints and removes the WAL

    const dbBytes = filesOf(file).db;
    const ro = openSource(file, { readonly: true });
    const opened = filesOf(file);
    const s = status(ro);
    expect(filesOf(file)).toEqual(opened);
    ro.close();
    expect(s).toMatchObject({
      enabled: true,
      seq: 1,
      tables: [
        { name: 't', armed: true },
        { name: 'u', armed: false, reason: 'TRIGGER_MISSING' },
      ],
    });
    expect(filesOf(file).db).toBe(dbBytes);
  });

  test('adding a UNIQUE index after enable unarms the table until it is re-armed with REPLACE guards', ({ makeDb }) => {
    const { db } = makeDb('s.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT)');
    const first = enable(db, ['t']);
    const guardOf = () => db.prepare("SELECT sql FROM sqlite_schema WHERE name = '_sluice_t1_bins'").pluck().get() as string;
    expect(guardOf()).not.toContain('"email" = NEW."email"');
    db.exec('CREATE UNIQUE INDEX t_email ON t (email)');
    expect(status(db).tables[0]).toMatchObject({ armed: false, reason: 'SCHEMA_CHANGED' });
    const again = enable(db, []);
    expect(again.rearmed).toEqual(['t']);
    expect(again.generation).toBe(first.generation + 1);
    expect(guardOf()).toContain('"email" = NEW."email"');
    expect(status(db).tables[0]?.armed).toBe(true);
  });

  test('status of a database without capture says so and writes nothing', ({ makeDb }) => {
    const { db, file } = makeDb('s.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    db.close();
    const dbBytes = filesOf(file).db;
    const ro = openSource(file, { readonly: true });
    expect(status(ro)).toMatchObject({ enabled: false, sourceId: null, problem: 'CAPTURE_ABSENT', tables: [] });
    ro.close();
    expect(filesOf(file).db).toBe(dbBytes);
  });
});
