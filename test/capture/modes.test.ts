import { test, expect, describe } from '../support/fixtures.ts';
import { enable, status } from '../../src/capture/index.ts';
import { journalEvents, cell } from '../support/journal.ts';

describe('capture modes', () => {
  test('keys mode journals only the key, in key order, with both keys on a key change', ({ makeDb }) => {
    const { db } = makeDb('k.db', 'CREATE TABLE t (a TEXT NOT NULL, b INTEGER NOT NULL, v, PRIMARY KEY (b, a)) WITHOUT ROWID');
    enable(db, ['t'], { mode: 'keys' });
    db.exec("INSERT INTO t VALUES ('x', 1, 'big value'); UPDATE t SET v = 'other'; UPDATE t SET a = 'y'; DELETE FROM t;");
    const events = journalEvents(db);
    expect(events.map((e) => [e.op, e.before, e.after])).toEqual([
      ['insert', undefined, [cell.int(1), cell.text('x')]],
      ['update', [cell.int(1), cell.text('x')], [cell.int(1), cell.text('x')]],
      ['update', [cell.int(1), cell.text('x')], [cell.int(1), cell.text('y')]],
      ['delete', [cell.int(1), cell.text('y')], undefined],
    ]);
    expect(db.prepare('SELECT journal_width AS w FROM _sluice_state').get()).toEqual({ w: 4n });
  });

  test('counter mode journals no images but still advances seq and last_seq', ({ makeDb }) => {
    const { db } = makeDb('c.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(db, ['t'], { mode: 'counter' });
    db.exec("INSERT INTO t VALUES (1, 'a'); UPDATE t SET v = 'a'; UPDATE t SET v = 'b'; DELETE FROM t;");
    const events = journalEvents(db);
    expect(events.map((e) => [e.seq, e.op, e.before, e.after])).toEqual([
      [1, 'insert', undefined, []],
      [2, 'update', [], []],
      [3, 'delete', [], undefined],
    ]);
    const s = status(db);
    expect(s.seq).toBe(3);
    expect(s.tables[0]).toMatchObject({ name: 't', mode: 'counter', lastSeq: 3, armed: true });
  });

  test('changing a table to another mode re-arms it and advances the generation', ({ makeDb }) => {
    const { db } = makeDb('m.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    const first = enable(db, ['t']);
    const second = enable(db, ['t'], { mode: 'keys' });
    expect(second.rearmed).toEqual(['t']);
    expect(second.generation).toBe(first.generation + 1);
    db.exec("INSERT INTO t VALUES (1, 'a')");
    expect(journalEvents(db).map((e) => e.after)).toEqual([[cell.int(1)]]);
  });
});
