// user triggers before or after enable never leave a consumer stale
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { enable, status } from '../../src/capture/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { verify } from '../../src/apply/check/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { readBatch, snapshot } from '../../src/feed/index.ts';
import { pythonExec } from '../support/journal.ts';
import { tableCells } from '../apply/support/target.ts';

/*
 * SQLite fires a table's triggers newest first. A user AFTER trigger newer
 * than sluice's fires before them: a touch trigger's UPDATE of the same row
 * would be journaled ahead of the change that caused it, with a stale
 * after-image. sluice's rule: its AFTER triggers fire before any user AFTER
 * trigger on the table. A newer one unarms the table (USER_TRIGGER_NEWER)
 * until it is re-armed, which sync does and reports. BEFORE triggers may
 * fire in any order. The writer is Python's sqlite3 (recursive_triggers off).
 */

const SCHEMA = `
  CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, touched INTEGER NOT NULL DEFAULT 0);
  CREATE TABLE log (id INTEGER PRIMARY KEY, t_id INTEGER, what TEXT);
  INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b');`;

const USER_TRIGGERS: Record<string, string> = {
  'AFTER UPDATE touch':
    'CREATE TRIGGER t_touch AFTER UPDATE ON t WHEN NEW.touched IS OLD.touched BEGIN UPDATE t SET touched = touched + 1 WHERE id = NEW.id; END',
  'AFTER INSERT into another captured table':
    "CREATE TRIGGER t_log AFTER INSERT ON t BEGIN INSERT INTO log (t_id, what) VALUES (NEW.id, 'inserted ' || NEW.v); END",
  'BEFORE INSERT that deletes the conflicting row': 'CREATE TRIGGER t_upsert BEFORE INSERT ON t BEGIN DELETE FROM t WHERE id = NEW.id; END',
  'BEFORE UPDATE that logs':
    "CREATE TRIGGER t_bu BEFORE UPDATE ON t BEGIN INSERT INTO log (t_id, what) VALUES (OLD.id, 'before update'); END",
};

const WRITES =
  "UPDATE t SET v = 'a2' WHERE id = 1; INSERT INTO t (id, v) VALUES (3, 'c'); INSERT OR REPLACE INTO t (id, v) VALUES (2, 'b2'); UPDATE t SET v = 'c2' WHERE id = 3; DELETE FROM t WHERE id = 1;";

/** Replays the `changes` stream from `cursor` into a JS model of each table, keyed by the first column. */
function replay(file: string, cursor: string, model: Map<string, Map<string, unknown[]>>): void {
  const db = openDatabase(file, { readonly: true });
  try {
    for (;;) {
      const b = readBatch(db, cursor);
      for (const e of b.events) {
        const rows = model.get(e.table) as Map<string, unknown[]>;
        if (e.op !== 'insert') {
          const before = Object.values(e.before as Record<string, unknown>);
          expect(rows.get(String(before[0])), `seq ${e.seq}: the before-image is the row as it was`).toEqual(before);
          rows.delete(String(before[0]));
        }
        if (e.op !== 'delete') {
          const after = Object.values(e.after as Record<string, unknown>);
          rows.set(String(after[0]), after);
        }
      }
      if (b.to === cursor) return;
      cursor = b.to;
    }
  } finally {
    db.close();
  }
}

function rowsOf(file: string, table: string): Map<string, unknown[]> {
  const db = openDatabase(file, { readonly: true });
  try {
    return new Map((db.prepare(`SELECT * FROM ${table}`).raw().all() as unknown[][]).map((r) => [String(r[0]), r]));
  } finally {
    db.close();
  }
}

describe.each(Object.entries(USER_TRIGGERS))('a user trigger (%s)', (_, triggerSql) => {
  test.for(['before', 'after'] as const)(
    'created %s enable: the change stream and a mirror equal the source after Python writes',
    async (when, { makeDb, tmp }) => {
      const { db, file } = makeDb('app.db', SCHEMA);
      if (when === 'before') db.exec(triggerSql);
      enable(db, ['t', 'log']);
      const target = path.join(tmp, 'cache.db');
      await sync(file, target);
      if (when === 'after') {
        db.exec(triggerSql);
        const armed = status(db).tables.find((x) => x.name === 't');
        if (/^CREATE TRIGGER \w+ AFTER/.test(triggerSql)) expect(armed).toMatchObject({ armed: false, reason: 'USER_TRIGGER_NEWER' });
        else expect(armed).toMatchObject({ armed: true });
      }
      // sync re-arms a table whose user trigger is newer, and reports it.
      const first = await sync(file, target);
      if (when === 'after' && /^CREATE TRIGGER \w+ AFTER/.test(triggerSql))
        expect(first.rearmed?.tables).toMatchObject([{ table: 't', reason: 'USER_TRIGGER_NEWER' }]);
      else expect(first.rearmed).toBeUndefined();
      expect(status(db).tables.every((x) => x.armed)).toBe(true);

      const start = snapshot(db, ['t', 'log'], { onRow: () => {} });
      const model = new Map([
        ['t', rowsOf(file, 't')],
        ['log', rowsOf(file, 'log')],
      ]);
      pythonExec(file, WRITES);
      replay(file, start.cursor, model);
      expect(model.get('t')).toEqual(rowsOf(file, 't'));
      expect(model.get('log')).toEqual(rowsOf(file, 'log'));

      const r = await sync(file, target);
      expect(r.projections.map((p) => [p.name, p.state])).toEqual([
        ['log', 'active'],
        ['t', 'active'],
      ]);
      expect((await verify(file, target)).ok).toBe(true);
      const tdb = openDatabase(target, { readonly: true });
      try {
        expect(tableCells(tdb, 'main', 't')).toEqual(tableCells(db, 'main', 't'));
        expect(tableCells(tdb, 'main', 'log')).toEqual(tableCells(db, 'main', 'log'));
      } finally {
        tdb.close();
      }
    },
  );
});

test('a user AFTER trigger writing another captured table is journaled after the change that fired it, in seq order', ({ makeDb }) => {
  const { db, file } = makeDb('app.db', SCHEMA);
  enable(db, ['t', 'log']);
  db.exec(USER_TRIGGERS['AFTER INSERT into another captured table'] as string);
  enable(db, []); // re-arm: sluice's triggers are the newest again
  const start = snapshot(db, ['t', 'log'], { onRow: () => {} });
  pythonExec(file, "INSERT INTO t (id, v) VALUES (7, 'x')");
  const events = readBatch(db, start.cursor).events.map((e) => [e.table, e.op]);
  expect(events).toEqual([
    ['t', 'insert'],
    ['log', 'insert'],
  ]);
});
