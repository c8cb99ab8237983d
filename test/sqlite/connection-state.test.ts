// each connection owns its cached state and a closed one drops it
import { test, expect, describe } from '../support/fixtures.ts';
import {
  openDatabase,
  closeDatabase,
  connectionState,
  slot,
  cachedStatement,
  adoptEncoding,
  textEncoding,
} from '../../src/sqlite/index.ts';

describe('per-connection state', () => {
  const counter = slot('test-counter', () => ({ n: 0 }));

  test('a slot is made once per connection, and each connection has its own', ({ makeDb }) => {
    const { db: a } = makeDb('a.db');
    const { db: b } = makeDb('b.db');
    connectionState(a).get(counter).n++;
    connectionState(a).get(counter).n++;
    expect(connectionState(a).get(counter).n).toBe(2);
    expect(connectionState(b).get(counter).n).toBe(0);
    expect(connectionState(b).peek(counter)).toEqual({ n: 0 });
    connectionState(a).delete(counter);
    expect(connectionState(a).peek(counter)).toBeUndefined();
  });

  test('a slot name is declared once', () => {
    expect(() => slot('test-counter', () => 0)).toThrow(/declared twice/);
  });

  test('a cached statement is reused on its connection and not after the connection is closed', ({ tmp }) => {
    const db = openDatabase(`${tmp}/c.db`, { create: true });
    const s = cachedStatement(db, 'SELECT 1', 'pluck');
    expect(cachedStatement(db, 'SELECT 1', 'pluck')).toBe(s);
    expect(connectionState(db).peek(counter)).toBeUndefined();
    connectionState(db).get(counter).n = 5;
    closeDatabase(db);
    expect(db.open).toBe(false);
    // Nothing of the closed connection is kept: its slots start over.
    expect(connectionState(db).peek(counter)).toBeUndefined();
    expect(() => cachedStatement(db, 'SELECT 1', 'pluck')).toThrow(/not open/);
  });

  test('one SQL in each row mode is a statement of its own, in that mode; past the limit the least recently used goes', ({ tmp }) => {
    const db = openDatabase(`${tmp}/m.db`, { create: true });
    try {
      const sql = 'SELECT 7 AS x';
      const object = cachedStatement(db, sql);
      const raw = cachedStatement(db, sql, 'raw');
      const pluck = cachedStatement(db, sql, 'pluck');
      expect(new Set([object, raw, pluck]).size).toBe(3);
      expect([object.get(), raw.get(), pluck.get()]).toEqual([{ x: 7n }, [7n], 7n]);
      // 300 more statements: the three above are kept while used, the first of the others goes.
      const first = cachedStatement(db, 'SELECT 0', 'pluck');
      for (let i = 1; i <= 300; i++) {
        cachedStatement(db, `SELECT ${i}`, 'pluck');
        expect(cachedStatement(db, sql)).toBe(object);
        expect(cachedStatement(db, sql, 'raw')).toBe(raw);
        expect(cachedStatement(db, sql, 'pluck')).toBe(pluck);
      }
      expect(cachedStatement(db, 'SELECT 0', 'pluck')).not.toBe(first);
      expect(cachedStatement(db, 'SELECT 300', 'pluck').get()).toBe(300n);
    } finally {
      closeDatabase(db);
    }
  });

  test('a connection closed by its own close() drops its state on its next use', ({ tmp }) => {
    const db = openDatabase(`${tmp}/d.db`, { create: true });
    expect(textEncoding(db)).toBe('UTF-8');
    connectionState(db).get(counter).n = 3;
    db.close();
    expect(connectionState(db).peek(counter)).toBeUndefined();
    // The encoding was cached: a closed connection no longer answers from it.
    expect(() => textEncoding(db)).toThrow(/not open/);
  });

  test('adopting an encoding forgets the cached one', ({ tmp }) => {
    const db = openDatabase(`${tmp}/e.db`, { create: true });
    try {
      expect(textEncoding(db)).toBe('UTF-8');
      adoptEncoding(db, 'UTF-16le');
      expect(textEncoding(db)).toBe('UTF-16le');
    } finally {
      closeDatabase(db);
    }
  });
});
