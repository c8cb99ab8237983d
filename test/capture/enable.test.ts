import { test, expect, describe } from '../support/fixtures.ts';
import { enable, status } from '../../src/capture/index.ts';

describe('enable', () => {
  test('a second enable with nothing missing changes nothing and keeps the generation', ({ makeDb }) => {
    const { db } = makeDb('a.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    const first = enable(db, ['t']);
    const second = enable(db, ['t']);
    expect(first.created).toBe(true);
    expect(second.created).toBe(false);
    expect(second.generation).toBe(first.generation);
    expect(second.sourceId).toBe(first.sourceId);
    expect(second.rearmed).toEqual([]);
  });

  test('a dropped trigger makes the table unarmed, and enable re-arms it with a new generation', ({ makeDb }) => {
    const { db } = makeDb('a.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    const first = enable(db, ['t']);
    db.exec('DROP TRIGGER _sluice_t1_upd');
    const s = status(db);
    expect(s.tables[0]?.armed).toBe(false);
    expect(s.tables[0]?.reason).toBe('TRIGGER_MISSING');
    const again = enable(db, []);
    expect(again.rearmed).toEqual(['t']);
    expect(again.generation).toBe(first.generation + 1);
    expect(status(db).tables[0]?.armed).toBe(true);
  });
});
